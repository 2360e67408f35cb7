# The xckpt tests run the built program.
add_dependencies(test_checkpoint xckpt_tool)
