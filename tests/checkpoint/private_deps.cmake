# The xckpt tests run the built program.
add_dependencies(test_checkpoint xckpt_tool)
# The corruption tests rewrite attributes of an index with HDF5 itself.
target_link_libraries(test_checkpoint PRIVATE HDF5::HDF5)
