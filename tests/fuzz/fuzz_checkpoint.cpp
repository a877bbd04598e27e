// libFuzzer harness: checkpoint file bytes -> CheckpointReader, then blocks
// read back as the types weft-run's loader asks for (scripts/fuzz.sh). Each
// input is read twice: as it is, and with its trailing checksum recomputed,
// so that mutations reach the block parser behind the checksum. Bad input
// must end in weft::InvalidInput with a message.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <weft/io/checkpoint.hpp>

namespace {

void read(const std::vector<unsigned char>& bytes)
{
    try {
        const weft::CheckpointReader in(bytes, "<fuzz>");
        for (const char* name : {"run.fingerprint", "run.steps", "stepper.nodes", "stepper.q", "run.scene",
                                 "yarn.eil.topology.yarns.offsets"}) {
            if (!in.has(name)) continue;
            (void)in.get_string(name);
            try {
                (void)in.get<double>(name);
            } catch (const weft::InvalidInput& e) {
                if (std::string(e.what()).empty()) __builtin_trap();
            }
            try {
                (void)in.get_value<std::int64_t>(name);
            } catch (const weft::InvalidInput& e) {
                if (std::string(e.what()).empty()) __builtin_trap();
            }
        }
    } catch (const weft::InvalidInput& e) {
        if (std::string(e.what()).empty()) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::vector<unsigned char> bytes(data, data + size);
    read(bytes);
    if (bytes.size() >= sizeof(std::uint64_t)) {
        const std::size_t body = bytes.size() - sizeof(std::uint64_t);
        const std::uint64_t sum = weft::checkpoint_detail::fnv1a(bytes.data(), body);
        std::memcpy(bytes.data() + body, &sum, sizeof sum);
        read(bytes);
    }
    return 0;
}
