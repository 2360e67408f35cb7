target_link_libraries(test_comm PRIVATE xtrain_comm)
# The program each rank runs in mpi_process_test.cpp and process_test.cpp (bin/xtrain_comm_worker).
if(NOT TARGET xtrain_comm_worker)
  add_executable(xtrain_comm_worker ${CMAKE_CURRENT_LIST_DIR}/worker/worker.cpp)
  target_include_directories(xtrain_comm_worker PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(xtrain_comm_worker PRIVATE xtrain_comm xtrain_common GTest::gtest
    Threads::Threads xtrain_warnings)
  set_target_properties(xtrain_comm_worker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  add_dependencies(test_comm xtrain_comm_worker)
endif()
