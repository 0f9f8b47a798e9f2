// GoogleTest and the standard headers most unit tests include, parsed once into a clang
// precompiled header for the sanitized unit-test build (Makefile: UNIT_PCH): each test
// file then compiles in about half the time. The test files still include what they use.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
