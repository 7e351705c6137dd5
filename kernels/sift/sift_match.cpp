// The CPU side of sift_match.h: the ratio test and mutual check (shared by
// both paths) and brute force by loops over the same CS_HD functions as the
// CUDA kernel.
#include "sift/sift_match.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace cs::sift {

namespace {

// Rows as 32-bit words (the layout the distance functions read), copied so
// that nothing is read through a pointer of another type.
template <class Rows>
std::vector<uint32_t> as_words(const typename Rows::Element *rows, int count) {
  std::vector<uint32_t> words(size_t(count) * Rows::kWords);
  if (count > 0) std::memcpy(words.data(), rows, words.size() * sizeof(uint32_t));
  return words;
}

void check_counts(int query_count, int train_count) {
  if (query_count < 0 || train_count < 0)
    throw std::invalid_argument("descriptor counts must not be negative (" + std::to_string(query_count) + ", " +
                                std::to_string(train_count) + ")");
}

}  // namespace

std::vector<DescriptorMatch> select_matches(const std::vector<NearestTwo> &nearest, double ratio,
                                            const std::vector<int> &nearest_query_of_train) {
  std::vector<DescriptorMatch> out;
  const bool mutual = !nearest_query_of_train.empty();
  for (size_t q = 0; q < nearest.size(); ++q) {
    const NearestTwo &n = nearest[q];
    if (n.best < 0 || n.second < 0) continue;  // no second neighbour: the ratio test keeps none
    if (!(double(n.best_distance) < ratio * double(n.second_distance))) continue;
    if (mutual && nearest_query_of_train.at(size_t(n.best)) != int(q)) continue;
    out.push_back({int(q), n.best, n.best_distance});
  }
  return out;
}

namespace {

template <class Rows>
std::vector<NearestTwo> nearest_two_loops(const typename Rows::Element *query, int query_count,
                                          const typename Rows::Element *train, int train_count) {
  check_counts(query_count, train_count);
  const std::vector<uint32_t> q = as_words<Rows>(query, query_count), t = as_words<Rows>(train, train_count);
  auto row = [](const std::vector<uint32_t> &words, int r) { return &words[size_t(r) * Rows::kWords]; };
  std::vector<uint32_t> train_terms(static_cast<size_t>(train_count));
  for (int j = 0; j < train_count; ++j) train_terms[size_t(j)] = Rows::row_term(row(t, j));
  std::vector<NearestTwo> out(static_cast<size_t>(query_count));
  for (int i = 0; i < query_count; ++i) {
    const uint32_t query_term = Rows::row_term(row(q, i));
    for (int j = 0; j < train_count; ++j)
      offer_neighbour(out[size_t(i)], Rows::distance(row(q, i), query_term, row(t, j), train_terms[size_t(j)]), j);
  }
  return out;
}

template <class Rows>
std::vector<DescriptorMatch> match_loops(const typename Rows::Element *query, int query_count,
                                         const typename Rows::Element *train, int train_count, double ratio,
                                         bool mutual) {
  if (query_count == 0 || train_count == 0) return {};
  std::vector<int> nearest_query_of_train;
  if (mutual)
    for (const NearestTwo &n : nearest_two_loops<Rows>(train, train_count, query, query_count))
      nearest_query_of_train.push_back(n.best);
  return select_matches(nearest_two_loops<Rows>(query, query_count, train, train_count), ratio,
                        nearest_query_of_train);
}

}  // namespace

std::vector<NearestTwo> nearest_two_host(const uint8_t *query, int query_count, const uint8_t *train,
                                         int train_count) {
  return nearest_two_loops<ByteDescriptorRows>(query, query_count, train, train_count);
}

std::vector<NearestTwo> nearest_two_host(const float *query, int query_count, const float *train, int train_count) {
  return nearest_two_loops<FloatDescriptorRows>(query, query_count, train, train_count);
}

std::vector<DescriptorMatch> match_host(const uint8_t *query, int query_count, const uint8_t *train, int train_count,
                                        double ratio, bool mutual) {
  return match_loops<ByteDescriptorRows>(query, query_count, train, train_count, ratio, mutual);
}

std::vector<DescriptorMatch> match_host(const float *query, int query_count, const float *train, int train_count,
                                        double ratio, bool mutual) {
  return match_loops<FloatDescriptorRows>(query, query_count, train, train_count, ratio, mutual);
}

}  // namespace cs::sift
