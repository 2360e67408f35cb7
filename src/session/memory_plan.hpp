// The session's memory accounting: what each replica keeps on its simulated IPU, charged to the
// device's memory model by tensor class. Activations are charged as the session allocates them: the
// buffer plan's block (session/buffer_plan.hpp) plus, of the activations kept out of it, those live
// at the schedule's peak (a real IPU compiler reuses activation memory the same way). With
// XTRAIN_BUFFER_REUSE=0, every activation live at the peak. With batch serialization the caller
// gives the tensors that live one slice at a time the shape of one slice (batch_serial.hpp).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <vector>

#include "device/ipu/memory_model.hpp"
#include "ir/graph.hpp"
#include "replication/sharding.hpp"
#include "session/offchip_plan.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::session {

// The memory model of `device` with what each of the `localReplicas` replicas of `graph` keeps on
// its IPUs (each tensor on the IPU of its virtual graph, ir/placement; the first without
// placement; each IPU with a buffer plan of its own): weights kept as shards (`shards`, by weight)
// charged as their shard plus a gathered temporary, the anchors read by the host outside the buffer
// plan. Off-chip tensors (`offChip`) are charged to the IPU's streaming memory; on chip each IPU
// holds, besides, the loaded copies of the op that loads the most of its off-chip tensors at once
// (an op's loads live while it runs: "off-chip staging", with the activations). Checks nothing:
// the caller calls check() on it.
device::MemoryModel chargeMemory(const ir::Graph& graph, const DeviceInfo& device,
                                 int64_t localReplicas,
                                 const std::map<TensorId, replication::ShardPlan>& shards,
                                 const std::vector<TensorId>& anchors,
                                 const OffChipPlan& offChip = {});

}  // namespace xtrain::session

#pragma GCC visibility pop
