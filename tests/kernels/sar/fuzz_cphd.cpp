// libFuzzer target for the CPHD reader: any byte string must either open and
// read completely or throw CphdError; never crash, hang or read out of bounds.
// Built and run by tests/run-fuzzer.sh cphd (clang -fsanitize=fuzzer,address,undefined).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "memory_file.h"
#include "sar/cphd.h"
#include "sar/simulator.h"

using namespace cs::sar;

// With CS_FUZZ_WRITE_SEED=<path>, writes a small valid CPHD file there (the
// seed corpus) and exits.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (const char *seed = std::getenv("CS_FUZZ_WRITE_SEED")) {
    SimulatorConfig c;
    c.domain = Domain::TOA;
    c.num_pulses = 4;
    c.pulse_length_s = 1e-7;
    c.samples_per_pulse = 16;
    c.targets = {{{1, 2, 0}, {1, 0}}};
    PhaseHistorySimulator sim(c);
    std::vector<PulseParameters> pvp(4);
    std::vector<std::complex<float>> samples(4 * 16);
    sim.generate(0, 4, pvp.data(), samples.data());
    CphdMetadata m = sim.cphd_metadata(4);
    m.format = SampleFormat::CI4;
    for (auto &s : samples) s *= 1000.f;
    CphdWriter w(seed, m);
    w.write(0, pvp, samples.data());
    w.close();
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const MemoryFile file(data, size);
  if (!file.ok()) return 0;
  try {
    CphdReader reader(file.path());
    const CphdMetadata &m = reader.metadata();
    for (size_t c = 0; c < m.channels.size(); ++c) reader.read_block(c, 0, m.channels[c].num_vectors);
  } catch (const CphdError &) {
  }
  return 0;
}
