// DeviceManager and DeviceInfo (include/xtrain/devicemanager.hpp) with PopART's names, keyword
// arguments and defaults (popart-python-api.txt, "Device manager"). docs/python.md, "Devices".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

// createIpuModelDevice's dict: values may be ints or strings ({"numIPUs": 2, "tilesPerIPU": 4}).
std::map<std::string, std::string> optionsFromDict(const py::dict& opts) {
  std::map<std::string, std::string> out;
  for (auto item : opts) {
    if (!py::isinstance<py::str>(item.first)) {
      throw py::type_error("device options: keys must be str, got " +
                           std::string(py::str(py::type::of(item.first).attr("__name__"))));
    }
    const auto key = item.first.cast<std::string>();
    if (py::isinstance<py::bool_>(item.second)) {
      out[key] = item.second.cast<bool>() ? "true" : "false";
    } else if (py::isinstance<py::int_>(item.second) || py::isinstance<py::str>(item.second)) {
      out[key] = py::str(item.second).cast<std::string>();
    } else {
      throw py::type_error("device option '" + key + "': expected an int or a str, got " +
                           std::string(py::str(py::type::of(item.second).attr("__name__"))));
    }
  }
  return out;
}

}  // namespace

void bindDevices(py::module_& m) {
  py::enum_<DeviceType>(m, "DeviceType")
      .value("IpuModel", DeviceType::IpuModel)
      .value("Cpu", DeviceType::Cpu)
      .value("Ipu", DeviceType::Ipu)
      .value("OfflineIpu", DeviceType::OfflineIpu)
      .value("Sim", DeviceType::Sim);
  py::enum_<DeviceConnectionType>(m, "DeviceConnectionType")
      .value("Always", DeviceConnectionType::Always)
      .value("OnDemand", DeviceConnectionType::OnDemand)
      .value("Never", DeviceConnectionType::Never);
  py::enum_<SyncPattern>(m, "SyncPattern")
      .value("Full", SyncPattern::Full)
      .value("SinglePipeline", SyncPattern::SinglePipeline)
      .value("ReplicaAndLadder", SyncPattern::ReplicaAndLadder);
  py::enum_<DeviceSelectionCriterion>(m, "DeviceSelectionCriterion")
      .value("First", DeviceSelectionCriterion::First)
      .value("Random", DeviceSelectionCriterion::Random);

  py::class_<DeviceInfo, std::shared_ptr<DeviceInfo>>(m, "DeviceInfo")
      .def("attach", &DeviceInfo::attach, py::call_guard<py::gil_scoped_release>())
      .def("detach", &DeviceInfo::detach, py::call_guard<py::gil_scoped_release>())
      .def("tryAttachUntilTimeout", &DeviceInfo::tryAttachUntilTimeout,
           py::call_guard<py::gil_scoped_release>(),
           "attach(), retried for DeviceManager.setOnDemandAttachTimeout's seconds (or "
           "XTRAIN_WAIT_FOR_IPU's, when longer).")
      .def_property_readonly("isAttached", &DeviceInfo::isAttached)
      .def_property_readonly("isAvailable", &DeviceInfo::isAvailable)
      .def_property_readonly("id", &DeviceInfo::getId)
      .def_property_readonly("numIpus", &DeviceInfo::getNumIpus)
      .def_property_readonly("tilesPerIPU", &DeviceInfo::getTilesPerIPU)
      .def_property_readonly("memoryPerTile", &DeviceInfo::getMemoryPerTile)
      .def_property_readonly("memoryPerIPU", &DeviceInfo::getMemoryPerIPU)
      .def_property_readonly("type", &DeviceInfo::getType)
      .def_property_readonly("connectionType", &DeviceInfo::getConnectionType)
      .def_property_readonly("version", &DeviceInfo::getVersion)
      .def_property_readonly("driverIds", &DeviceInfo::getIpuIds)
      .def_property_readonly("ipuIds", &DeviceInfo::getIpuIds)
      .def("__enter__", [](std::shared_ptr<DeviceInfo> d) { return d; })
      .def(
          "__exit__",
          [](DeviceInfo& d, const py::object&, const py::object&, const py::object&) {
            d.detach();
            return false;
          },
          py::arg("exc_type"), py::arg("exc_value"), py::arg("traceback"))
      .def("__repr__", &DeviceInfo::toString)
      .def("__str__", &DeviceInfo::toString);

  // One process-wide manager; DeviceManager() returns a handle to it, as PopART's does.
  py::class_<DeviceManager, std::unique_ptr<DeviceManager, py::nodelete>> dm(m, "DeviceManager");
  dm.def(py::init([] {
    return std::unique_ptr<DeviceManager, py::nodelete>(&DeviceManager::createDeviceManager());
  }));
  // Each acquire call and its try* form take the same arguments, in C++'s order.
  using AcquireAvailable = decltype(&DeviceManager::acquireAvailableDevice);
  const std::pair<const char*, AcquireAvailable> acquireAvailable[] = {
      {"acquireAvailableDevice", &DeviceManager::acquireAvailableDevice},
      {"tryAcquireAvailableDevice", &DeviceManager::tryAcquireAvailableDevice}};
  for (const auto& [name, fn] : acquireAvailable) {
    dm.def(name, fn, py::arg("numIpus") = 1, py::arg("tilesPerIpu") = 0,
           py::arg("pattern") = SyncPattern::Full,
           py::arg("connectionType") = DeviceConnectionType::Always,
           py::arg("selectionCriterion") = DeviceSelectionCriterion::First,
           py::call_guard<py::gil_scoped_release>());
  }
  using AcquireById = decltype(&DeviceManager::acquireDeviceById);
  const std::pair<const char*, AcquireById> acquireById[] = {
      {"acquireDeviceById", &DeviceManager::acquireDeviceById},
      {"tryAcquireDeviceById", &DeviceManager::tryAcquireDeviceById}};
  for (const auto& [name, fn] : acquireById) {
    dm.def(name, fn, py::arg("id"), py::arg("pattern") = SyncPattern::Full,
           py::arg("connectionType") = DeviceConnectionType::Always,
           py::call_guard<py::gil_scoped_release>());
  }
  // The devices made from an options dict.
  using CreateFromOptions = decltype(&DeviceManager::createIpuModelDevice);
  const std::pair<const char*, CreateFromOptions> createFromOptions[] = {
      {"createIpuModelDevice", &DeviceManager::createIpuModelDevice},
      {"createOfflineIPUDevice", &DeviceManager::createOfflineIPUDevice},
      {"createSimDevice", &DeviceManager::createSimDevice}};
  for (const auto& [name, fn] : createFromOptions) {
    dm.def(
        name,
        [fn = fn](DeviceManager& self, const py::dict& opts) {
          return (self.*fn)(optionsFromDict(opts));
        },
        py::arg("opts") = py::dict());
  }
  dm.def("createCpuDevice", &DeviceManager::createCpuDevice)
      .def("enumerateDevices", &DeviceManager::enumerateDevices,
           py::arg("pattern") = SyncPattern::Full, py::arg("numIpus") = 1,
           py::arg("deviceType") = DeviceType::Ipu,
           py::arg("connectionType") = DeviceConnectionType::Always, py::arg("tilesPerIPU") = 0,
           py::call_guard<py::gil_scoped_release>())
      .def(
          "setOnDemandAttachTimeout",
          [](DeviceManager& self, int64_t attachTimeout) {
            // A negative number would wrap to a huge unsigned one: refuse it here.
            if (attachTimeout < 0) {
              throw py::value_error("setOnDemandAttachTimeout: attachTimeout must be >= 0, got " +
                                    std::to_string(attachTimeout));
            }
            if (attachTimeout > DeviceInfo::kMaxAttachWaitSeconds) {
              throw error("setOnDemandAttachTimeout: {} s is too long; at most {} (30 days)",
                          attachTimeout, DeviceInfo::kMaxAttachWaitSeconds);
            }
            self.setOnDemandAttachTimeout(static_cast<unsigned>(attachTimeout));
          },
          py::arg("attachTimeout"))
      .def("createOfflineIpuFromSystemString", [](DeviceManager&, const std::string&, int) {
        throw error(
            "createOfflineIpuFromSystemString is not implemented (use createOfflineIPUDevice "
            "with numIPUs, tilesPerIPU and ipuVersion)");
      });
}

}  // namespace xtrain::python
