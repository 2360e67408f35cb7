# The replication layer's unit tests drive it directly, over the inproc backend's communicators.
target_link_libraries(test_${_name} PRIVATE xtrain_replication xtrain_comm)
# Shared helpers of the replication tests (not a *_test.cpp, so the glob leaves them out).
target_sources(test_${_name} PRIVATE ${_dir}/replication_testing.cpp)
