# distributed_session_test.cpp starts this binary under xrun (see tests/tools/private_deps.cmake).
set(_test_properties RESOURCE_LOCK xtrain_ipu_pool)
# DistributedWorker.* and GroupedWorker.* are the instances' side of DistributedSession.* and
# GroupedSession.*: xrun runs them, ctest does not.
set(_test_filter "-DistributedWorker.*:GroupedWorker.*")
