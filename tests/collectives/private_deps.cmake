# Shared helpers of the collective tests (not a *_test.cpp, so the glob leaves them out).
target_sources(test_${_name} PRIVATE ${_dir}/collective_models.cpp)
# collective_distributed_test.cpp starts this binary under xrun (see tests/tools/private_deps.cmake).
if(TARGET xrun)
  add_dependencies(test_${_name} xrun)
endif()
set(_test_properties RESOURCE_LOCK xtrain_ipu_pool)
# CollectiveWorker.* are the instances' side of CollectivesAcrossInstances.*: xrun runs them, ctest
# does not.
set(_test_filter "-CollectiveWorker.*")
