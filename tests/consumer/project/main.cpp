#include <iostream>
#include <weft/weft.hpp>

int main()
{
    weft::Vec<double, 8> q, v;
    q << 0, 0, 0, 0, 3, 0, 0, 2;  // |Δx| = 3 over Δs = 2
    v.setZero();
    const auto e = weft::stretch_strain(q, v);
    std::cout << "stretch strain " << e.strain(0) << "\n";
    return e.strain(0) == 0.5 ? 0 : 1;
}
