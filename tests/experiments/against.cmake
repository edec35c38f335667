# tests for isim validate --against aiperf | guidellm | vllm-bench (experiments/validate/against_*):
# the readers on their fixtures, the replay by hand on the linear profile, and the command line.
isim_test(test_against LIBS isim_experiments SOURCES
  experiments/test_against_readers.cpp
  experiments/test_against_replay.cpp
)
add_dependencies(test_against isim)
