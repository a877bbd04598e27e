// libFuzzer harness: scene JSON text -> parse_scene_text -> the yarn or
// triangle model built from it (scripts/fuzz.sh). Bad input must end in
// weft::InvalidInput with a message; anything else (a crash, a sanitizer
// report, another exception, a hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const weft::SceneDescription scene = weft::parse_scene_text(text, "<fuzz>");
        // Keep each input small: a scene beyond 100 MB is refused the way a
        // scene beyond the machine's memory is (memory_estimate.hpp).
        weft::require_fits_in_memory(scene, 1e8);
        if (weft::is_triangle_scene(scene)) {
            const weft::TriangleScene<double> built = weft::build_triangle_scene<double>(scene);
            (void)built;
        } else {
            const weft::YarnScene<double> built = weft::build_yarn_scene<double>(scene);
            (void)built;
        }
    } catch (const weft::InvalidInput& e) {
        if (std::string(e.what()).empty()) __builtin_trap();  // every refusal says why
    }
    return 0;
}
