# distributed_session_test.cpp starts this binary under xrun (see tests/tools/private_deps.cmake).
set(_test_properties RESOURCE_LOCK xtrain_ipu_pool)
# DistributedWorker.*, GroupedWorker.* and ShardedWorker.* are the instances' side of
# DistributedSession.*, GroupedSession.* and ShardedSession.*: xrun runs them, ctest does not.
set(_test_filter "-DistributedWorker.*:GroupedWorker.*:ShardedWorker.*")
