# tests for experiments/headroom (isim headroom): the search, the limiting factor and the report
# without a simulation, and the command line (which runs the built binary).
isim_test(test_headroom LIBS isim_experiments SOURCES
  experiments/test_headroom.cpp
  experiments/test_headroom_cli.cpp
)
add_dependencies(test_headroom isim)
