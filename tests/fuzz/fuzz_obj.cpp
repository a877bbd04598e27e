// libFuzzer harness: OBJ text -> parse_obj_mesh -> mesh_hinges and the
// triangle model built on it (scripts/fuzz.sh). Bad input must end in
// weft::InvalidInput with a message.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <weft/model/triangle_mesh.hpp>
#include <weft/model/triangle_model.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    try {
        const weft::TriangleMesh mesh = weft::parse_obj_mesh(in, "<fuzz>", 1.0);
        weft::TriangleMaterial<double> material;
        material.stvk = weft::StVKDensity<double>{200.0, 200.0};
        material.areal_density = 0.2;
        material.bending_stiffness = 1e-5;
        const weft::TriangleModel<double> model = weft::build_triangle_model<double>(mesh, material);
        (void)model;
    } catch (const weft::InvalidInput& e) {
        if (std::string(e.what()).empty()) __builtin_trap();
    }
    return 0;
}
