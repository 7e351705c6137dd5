// ENVI data files: finding the header/data pair, and reading blocks of lines
// with pread (64-bit offsets, thread safe, nothing loaded beyond the block).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/split_work.h"
#include "hsi/envi.h"
#include "hsi/text_parse.h"

namespace cs::hsi {

namespace {

bool is_regular_file(const std::string &path) { return not_a_regular_file(path).empty(); }

bool ends_with_ci(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && text::lower(s.substr(s.size() - suffix.size())) == suffix;
}

std::string strip_extension(const std::string &path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path;
  return path.substr(0, dot);
}

}  // namespace

std::string not_a_regular_file(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? "does not exist" : std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  return S_ISREG(st.st_mode) ? "" : "is not a regular file";
}

EnviFiles locate_envi_files(const std::string &path) {
  EnviFiles files;
  if (ends_with_ci(path, ".hdr")) {
    if (const std::string why = not_a_regular_file(path); !why.empty())
      throw EnviError(path + ": the ENVI header " + why);
    files.header = path;
    const std::string base = path.substr(0, path.size() - 4);
    for (const char *ext : {"", ".img", ".dat", ".raw", ".bsq", ".bil", ".bip", ".sli", ".IMG", ".DAT", ".SLI"}) {
      if (is_regular_file(base + ext)) {
        files.data = base + ext;
        break;
      }
    }
    if (files.data.empty())
      throw EnviError(path + ": no data file next to the header (tried " + base + " with no extension, .img, .dat, "
                      ".raw, .bsq, .bil, .bip and .sli)");
  } else {
    if (const std::string why = not_a_regular_file(path); !why.empty())
      throw EnviError(path + ": the ENVI data file " + why);
    files.data = path;
    for (const std::string &candidate : {path + ".hdr", strip_extension(path) + ".hdr", strip_extension(path) + ".HDR"}) {
      if (is_regular_file(candidate)) {
        files.header = candidate;
        break;
      }
    }
    if (files.header.empty())
      throw EnviError(path + ": no ENVI header found (tried " + path + ".hdr and " + strip_extension(path) + ".hdr)");
  }
  return files;
}

EnviReader::EnviReader(const std::string &path) : files_(locate_envi_files(path)) {
  header_ = read_envi_header(files_.header);
  fd_ = ::open(files_.data.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw EnviError(files_.data + ": cannot open the data file: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw EnviError(files_.data + ": cannot stat the data file: " + std::strerror(err));
  }
  const uint64_t needed = uint64_t(header_.header_offset) + header_.data_bytes();
  if (uint64_t(st.st_size) < needed) {
    ::close(fd_);
    fd_ = -1;
    throw EnviError(files_.data + " is " + std::to_string(st.st_size) + " bytes, but " + files_.header + " needs " +
                    std::to_string(needed) + " (header offset " + std::to_string(header_.header_offset) + " + " +
                    std::to_string(header_.samples) + " samples x " + std::to_string(header_.lines) + " lines x " +
                    std::to_string(header_.bands) + " bands x " + std::to_string(header_.bytes_per_sample()) +
                    " bytes): the data file is truncated or the header is wrong");
  }
}

EnviReader::~EnviReader() {
  if (fd_ >= 0) ::close(fd_);
}

size_t EnviReader::line_bytes() const { return header_.samples * header_.bands * header_.bytes_per_sample(); }

void EnviReader::set_read_threads(int threads) { read_threads_ = threads > 0 ? threads : default_read_threads(); }

void EnviReader::read_exact(void *dst, size_t bytes, uint64_t offset) const {
  auto *out = static_cast<unsigned char *>(dst);
  for_each_piece(bytes, 1, read_threads_, kReadPiece,
                 [&](size_t begin, size_t size) { read_range(out + begin, size, offset + begin); });
}

void EnviReader::read_range(unsigned char *out, size_t bytes, uint64_t offset) const {
  while (bytes > 0) {
    // Linux transfers at most about 2 GiB per call: loop.
    const ssize_t got = ::pread(fd_, out, bytes, off_t(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw EnviError(files_.data + ": read error at byte " + std::to_string(offset) + ": " + std::strerror(errno));
    }
    if (got == 0)
      throw EnviError(files_.data + ": unexpected end of file at byte " + std::to_string(offset) +
                      " (the file shrank after it was opened?)");
    out += got;
    bytes -= size_t(got);
    offset += uint64_t(got);
  }
}

void EnviReader::read_lines(size_t first_line, size_t count, void *dst) const {
  if (first_line > header_.lines || count > header_.lines - first_line)
    throw std::out_of_range(files_.data + ": lines " + std::to_string(first_line) + ".." +
                            std::to_string(first_line + count) + " are outside the image's " +
                            std::to_string(header_.lines) + " lines");
  if (count == 0) return;
  const uint64_t base = header_.header_offset;
  if (header_.interleave != Interleave::bsq) {
    // BIL and BIP store each line's bands together: one contiguous range.
    read_exact(dst, count * line_bytes(), base + uint64_t(first_line) * line_bytes());
    return;
  }
  // BSQ: the block is the same line range cut out of every band plane.
  const size_t row_bytes = header_.samples * header_.bytes_per_sample();
  const uint64_t plane_bytes = uint64_t(header_.lines) * row_bytes;
  auto *out = static_cast<unsigned char *>(dst);
  for (size_t b = 0; b < header_.bands; ++b)
    read_exact(out + b * count * row_bytes, count * row_bytes, base + b * plane_bytes + uint64_t(first_line) * row_bytes);
}

std::vector<uint8_t> EnviReader::read_lines(size_t first_line, size_t count) const {
  std::vector<uint8_t> block(block_bytes(count));
  read_lines(first_line, count, block.data());
  return block;
}

}  // namespace cs::hsi
