// Logging with PopART's Python names (executing-graphs.txt, "Logging"):
//
//   xtrain.getLogger().setLevel("DEBUG")            # every module
//   xtrain.getLogger("session").setLevel("OFF")     # one module
//
// getLogger(name="all") returns a Logger for "all", "popart" or "xtrain" (each sets every module;
// PopART's "python" and "none" are the default module alone) or one of xtrain::logging's module
// names; an unknown name raises naming it and the valid ones. Levels are "TRACE", "DEBUG", "INFO",
// "WARN", "ERR", "CRITICAL", "OFF" (case-insensitive, "WARNING" and "ERROR" accepted), or the
// LogLevel enum.
#include "xtrain/logging.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <string>
#include <variant>

#include "bindings.hpp"
#include "xtrain/error.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

using logging::Level;
using logging::Module;

// getLogger(name): setLevel goes through logging::setLevel(name, level), so "all", "popart" and
// "xtrain" set every module there as in C++ (executing-graphs.txt 5.7.1); reading a level or
// logging a message uses the module itself ("all" and "popart" read the default module).
class Logger {
 public:
  explicit Logger(const std::string& name) : name_(name), module_(moduleOf(name)) {}
  const std::string& name() const { return name_; }

  void setLevel(const std::variant<Level, std::string>& level) {
    logging::setLevel(name_, levelName(level));
  }
  std::string getLevel() const { return logging::toString(logging::getLevel(module_)); }
  bool isEnabledFor(const std::variant<Level, std::string>& level) const {
    return logging::shouldLog(module_, logging::levelFromString(levelName(level)));
  }
  void log(Level level, const std::string& message) const { logging::log(module_, level, message); }

 private:
  // The module whose messages and level this logger has; throws (naming the valid names) on an
  // unknown one, as getLogger("nosuchmodule") should.
  static Module moduleOf(const std::string& name) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* whole : {"all", "popart", "python", "none"}) {
      if (lower == whole) return Module::xtrain;
    }
    try {
      return logging::moduleFromString(name);
    } catch (const error&) {
      std::string valid = "all, popart";
      for (Module m : logging::allModules) valid += std::string(", ") + logging::toString(m);
      throw error("unknown log module '{}' (valid modules: {}, python, none)", name, valid);
    }
  }
  static std::string levelName(const std::variant<Level, std::string>& level) {
    if (const auto* l = std::get_if<Level>(&level)) return logging::toString(*l);
    return std::get<std::string>(level);
  }

  std::string name_;
  Module module_;
};

}  // namespace

void bindLogging(py::module_& m) {
  // PopART's Python programs start at PopART's default level, WARN (its logging.cpp), so its
  // warnings (a deprecated option set, a weight the loss does not depend on) reach stderr unasked;
  // C++ programs keep xtrain's silent default. XTRAIN_LOG_LEVEL and XTRAIN_LOG_CONFIG still win.
  logging::setDefaultLevel(Level::Warn);
  py::enum_<Level>(m, "LogLevel")
      .value("TRACE", Level::Trace)
      .value("DEBUG", Level::Debug)
      .value("INFO", Level::Info)
      .value("WARN", Level::Warn)
      .value("ERR", Level::Err)
      .value("CRITICAL", Level::Critical)
      .value("OFF", Level::Off);

  py::class_<Logger>(m, "Logger", "A module's logger (getLogger).")
      .def(py::init<const std::string&>(), py::arg("name") = "all")
      .def_property_readonly("name", &Logger::name)
      .def("setLevel", &Logger::setLevel, py::arg("level"),
           "Sets the level: TRACE, DEBUG, INFO, WARN, ERR, CRITICAL or OFF.")
      .def("getLevel", &Logger::getLevel)
      .def("isEnabledFor", &Logger::isEnabledFor, py::arg("level"))
      .def(
          "trace", [](const Logger& l, const std::string& s) { l.log(Level::Trace, s); },
          py::arg("msg"))
      .def(
          "debug", [](const Logger& l, const std::string& s) { l.log(Level::Debug, s); },
          py::arg("msg"))
      .def(
          "info", [](const Logger& l, const std::string& s) { l.log(Level::Info, s); },
          py::arg("msg"))
      .def(
          "warn", [](const Logger& l, const std::string& s) { l.log(Level::Warn, s); },
          py::arg("msg"))
      .def(
          "warning", [](const Logger& l, const std::string& s) { l.log(Level::Warn, s); },
          py::arg("msg"))
      .def(
          "error", [](const Logger& l, const std::string& s) { l.log(Level::Err, s); },
          py::arg("msg"))
      .def(
          "critical", [](const Logger& l, const std::string& s) { l.log(Level::Critical, s); },
          py::arg("msg"))
      .def("__repr__",
           [](const Logger& l) { return "<xtrain.Logger " + l.name() + " " + l.getLevel() + ">"; });

  m.def(
      "getLogger", [](const std::string& name) { return Logger(name); }, py::arg("name") = "all",
      "The logger of a module: 'all', 'popart' or 'xtrain' (setLevel sets every module), "
      "'session', 'ir', 'devicex', ... (xtrain::logging's modules).");
  m.def(
      "setLogLevel",
      [](const std::string& name, const std::variant<Level, std::string>& level) {
        Logger(name).setLevel(level);
      },
      py::arg("module"), py::arg("level"), "getLogger(module).setLevel(level).");
  m.def("configureLoggingFromEnvironment", &logging::configureFromEnvironment,
        "Rereads XTRAIN_LOG_LEVEL, XTRAIN_LOG_DEST and XTRAIN_LOG_CONFIG.");
  m.def("flushLogs", &logging::flush, "Writes buffered log lines to the destination.");
}

}  // namespace xtrain::python
