#include "core.h"

#include <numeric>
#include <stdexcept>

namespace hello {

std::string greet(const std::string& name) { return "hello, " + name; }

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) {
        throw std::invalid_argument("dot: vectors differ in length");
    }
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

}  // namespace hello
