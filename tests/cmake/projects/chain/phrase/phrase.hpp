#pragma once
#include <string>
std::string phrase();
