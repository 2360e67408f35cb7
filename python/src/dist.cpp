// The submodule xtrain.dist: xtrain::dist (include/xtrain/dist.hpp), PopDist's helpers for a
// program started by xrun, so `xrun -n 4 python3 train.py` runs one instance per process.
#include "xtrain/dist.hpp"

#include <pybind11/pybind11.h>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindDist(py::module_& m) {
  py::module_ d = m.def_submodule(
      "dist",
      "PopDist's helpers for programs started by xrun (xtrain::dist): where this instance "
      "stands in the job, its device and its replication options.");
  d.def("isPopdistEnvSet", &dist::isPopdistEnvSet,
        "True when a launcher (xrun, mpirun, srun) started this process.");
  d.def("isDistributed", &dist::isDistributed, "True when the job has more than one instance.");
  d.def("getNumInstances", &dist::getNumInstances);
  d.def("getInstanceIndex", &dist::getInstanceIndex);
  d.def("getLocalInstanceIndex", &dist::getLocalInstanceIndex);
  d.def("getNumLocalReplicas", &dist::getNumLocalReplicas);
  d.def("getNumTotalReplicas", &dist::getNumTotalReplicas);
  d.def("getReplicaIndexOffset", &dist::getReplicaIndexOffset);
  d.def("getNumIpusPerReplica", &dist::getNumIpusPerReplica);
  d.def("getJobId", &dist::getJobId,
        "The job's id, the same in every instance of one job (pid-<pid> without a launcher).");
  d.def("configureSessionOptions", &dist::configureSessionOptions, py::arg("options"),
        "Sets options' replication members (enableReplicatedGraphs, replicatedGraphCount, "
        "enableDistributedReplicatedGraphs, globalReplicationFactor, globalReplicaOffset) from "
        "the launcher's environment, in place.");
  d.def("getDevice", &dist::getDevice, py::arg("ipusPerReplica") = 0,
        py::call_guard<py::gil_scoped_release>(),
        "This instance's device: getNumLocalReplicas() x ipusPerReplica IPUs (0: "
        "getNumIpusPerReplica()) of the IPUs the launcher gave it.");
  d.attr("kPreemptedExitCode") = dist::kPreemptedExitCode;
  d.def("handlePreemption", &dist::handlePreemption,
        "Installs handlers for SIGUSR1 and SIGTERM that note a preemption request (instead of "
        "Python's handlers or the default action).");
  d.def("preemptionRequested", &dist::preemptionRequested,
        "True once this process got SIGUSR1 or SIGTERM after handlePreemption().");
  d.def("preemptionSignal", &dist::preemptionSignal);
  d.def("preemptionAgreed", &dist::preemptionAgreed, py::call_guard<py::gil_scoped_release>(),
        "Collective: true on every instance when any of them got a preemption request.");
}

}  // namespace xtrain::python
