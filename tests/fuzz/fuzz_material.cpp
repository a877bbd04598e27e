// libFuzzer harness: tabulated material JSON text -> parse_tabulated_material_text
// (scripts/fuzz.sh). Bad input must end in weft::InvalidInput with a message.
#include <cstddef>
#include <cstdint>
#include <string>

#include <weft/io/material_file.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const weft::TabulatedMaterial material = weft::parse_tabulated_material_text(text, "<fuzz>");
        (void)material;
    } catch (const weft::InvalidInput& e) {
        if (std::string(e.what()).empty()) __builtin_trap();
    }
    return 0;
}
