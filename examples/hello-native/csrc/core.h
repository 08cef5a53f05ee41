// The C++ core: plain functions with no Python in sight.
#pragma once

#include <string>
#include <vector>

namespace hello {

std::string greet(const std::string& name);
double dot(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace hello
