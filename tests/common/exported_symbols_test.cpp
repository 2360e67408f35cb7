// The module libraries export xtrain's API, not their third-party dependencies: no exported dynamic
// symbol of a libxtrain_*.so belongs to fmt, spdlog, nlohmann, onnx, protobuf, oneDNN or gloo, nor
// is a std:: template instantiated over their types (docs/architecture.md, "Symbol visibility").
// Reads `nm -D --defined-only -C` of each library of the build tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

// Whether an exported symbol (demangled) is a third-party's. A function of namespace xtrain may
// take or return third-party types (xtrain::ir::onnxutil::onnxOpsetOf(onnx::ModelProto const&)):
// only its name is read, up to the parameter list. Anything else is the third party's as soon as it
// names one of their namespaces (spdlog::sinks::sink's type_info, std::map<std::string,
// onnx::TypeProto>).
bool isThirdPartySymbol(std::string symbol) {
  static const std::regex thirdParty(
      R"((^|[^\w:])(fmt|spdlog|nlohmann|onnx|dnnl|gloo|google::protobuf)::)");
  for (const char* prefix : {"typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ",
                             "guard variable for ", "non-virtual thunk to ", "virtual thunk to "}) {
    if (symbol.rfind(prefix, 0) == 0) symbol = symbol.substr(std::string(prefix).size());
  }
  if (symbol.rfind("xtrain::", 0) == 0) symbol = symbol.substr(0, symbol.find('('));
  return std::regex_search(symbol, thirdParty);
}

// The demangled names of the dynamic symbols `library` defines (empty if nm cannot run).
std::vector<std::string> exportedSymbols(const fs::path& library) {
  const std::string command = "nm -D --defined-only -C '" + library.string() + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::vector<std::string> out;
  if (!pipe) return out;
  std::string line;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe.get())) {
    line += buffer;
    if (line.back() != '\n') continue;
    line.pop_back();
    // "<address> <type> <name>"
    const size_t first = line.find(' ');
    const size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
    if (second != std::string::npos) out.push_back(line.substr(second + 1));
    line.clear();
  }
  return out;
}

// The module libraries of the build tree: lib/libxtrain_<module>.so.
std::vector<fs::path> moduleLibraries() {
  const fs::path dir = fs::path(XTRAIN_BIN_DIR) / ".." / "lib";
  std::vector<fs::path> out;
  static const std::regex name(R"(libxtrain_\w+\.so)");
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (std::regex_match(entry.path().filename().string(), name)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ExportedSymbols, RecognisesThirdPartySymbols) {
  EXPECT_TRUE(isThirdPartySymbol("typeinfo for spdlog::sinks::sink"));
  EXPECT_TRUE(isThirdPartySymbol("fmt::v9::detail::vformat_to(fmt::v9::detail::buffer<char>&)"));
  EXPECT_TRUE(isThirdPartySymbol("google::protobuf::internal::ArenaStringPtr::Set(char const*)"));
  EXPECT_TRUE(isThirdPartySymbol(
      "std::_Rb_tree<std::string, std::pair<std::string const, onnx::TypeProto>>::find()"));
  EXPECT_TRUE(isThirdPartySymbol("vtable for std::_Sp_counted_ptr_inplace<spdlog::logger>"));
  EXPECT_TRUE(isThirdPartySymbol("xtrain::Holder<nlohmann::json>::get() const"));
  EXPECT_TRUE(isThirdPartySymbol(
      "std::string onnx::MakeString<char [22]>(char const (&) [22])"));  // a return type first
  EXPECT_FALSE(isThirdPartySymbol("xtrain::ir::onnxutil::onnxOpsetOf(onnx::ModelProto const&)"));
  EXPECT_FALSE(
      isThirdPartySymbol("xtrain::comm::gloo::allGather(xtrain::comm::gloo::Exchange "
                         "const&, unsigned long)"));
  EXPECT_FALSE(isThirdPartySymbol("typeinfo for xtrain::error"));
  EXPECT_FALSE(isThirdPartySymbol("std::vector<xtrain::TensorInfo>::~vector()"));
}

TEST(ExportedSymbols, ModuleLibrariesExportNoThirdPartySymbol) {
  const auto libraries = moduleLibraries();
  ASSERT_FALSE(libraries.empty()) << "no libxtrain_*.so beside " << XTRAIN_BIN_DIR;
  for (const auto& library : libraries) {
    const auto symbols = exportedSymbols(library);
    ASSERT_FALSE(symbols.empty()) << "nm -D printed nothing for " << library;
    std::vector<std::string> thirdParty;
    for (const auto& s : symbols) {
      if (isThirdPartySymbol(s)) thirdParty.push_back(s);
    }
    std::string shown;
    for (size_t i = 0; i < thirdParty.size() && i < 20; ++i) shown += "  " + thirdParty[i] + "\n";
    EXPECT_TRUE(thirdParty.empty())
        << library.filename().string() << " exports " << thirdParty.size()
        << " third-party symbols (cmake/xtrain_exports.map, docs/architecture.md):\n"
        << shown;
    std::cout << library.filename().string() << ": " << symbols.size() << " exported symbols\n";
  }
}

}  // namespace
}  // namespace xtrain::testing
