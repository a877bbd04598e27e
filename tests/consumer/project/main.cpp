#include <iostream>
#include <weft/io/scene.hpp>  // needs nlohmann_json, found by weft-config.cmake (find_dependency)
#include <weft/weft.hpp>

int main()
{
    weft::Vec<double, 8> q, v;
    q << 0, 0, 0, 0, 3, 0, 0, 2;  // |Δx| = 3 over Δs = 2
    v.setZero();
    const auto e = weft::stretch_strain(q, v);
    std::cout << "stretch strain " << e.strain(0) << "\n";
    // The io headers through the installed package: a scene parsed from text.
    const weft::SceneDescription scene = weft::parse_scene_text(R"({"time_step": 0.002, "duration": 0.1,
        "cloth": [{"type": "woven", "yarns": [4, 3], "spacing": 0.001, "radius": 0.00025, "density": 130,
                   "stiffness": {"stretch": 1e-4, "bending": 1e-12, "shear": 1e-4}}]})");
    std::cout << "scene time step " << scene.time_step << ", " << scene.cloth.size() << " cloth\n";
    return e.strain(0) == 0.5 && scene.time_step == 0.002 && scene.cloth.size() == 1 ? 0 : 1;
}
