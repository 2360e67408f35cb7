# distributed_session_test.cpp starts this binary under xrun (see tests/tools/private_deps.cmake).
set(_test_properties RESOURCE_LOCK xtrain_ipu_pool)
# The *Worker.* cases are the instances' side of DistributedSession.*, GroupedSession.*,
# ShardedSession.*, CheckpointTest.InstancesSaveInParallelAndResume, Preemption.InstancesAgreeOnTheStep,
# SessionTrace.XrunMergesTheInstancesParts and OffChipSession.InstancesTrainToTheBitsOfOnChipInstances:
# xrun runs them, ctest does not.
set(_test_filter
  "-DistributedWorker.*:GroupedWorker.*:ShardedWorker.*:CheckpointWorker.*:PreemptionWorker.*:SessionTraceWorker.*:OffChipWorker.*")
# report_test.cpp and session_trace_test.cpp parse JSON.
target_link_libraries(test_${_name} PRIVATE nlohmann_json::nlohmann_json)
