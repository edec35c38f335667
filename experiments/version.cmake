# Runs at every build (not only at configure time), so the git sha recorded in each run's
# provenance is the commit the binary was built from. Rewrites version.h only when it changes.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT sha)
  set(sha "unknown")
elseif(dirty)
  set(sha "${sha}-dirty")
endif()
set(text "// Generated at build time: the build's identity, recorded in every run's provenance.
#pragma once
#define ISIM_VERSION \"${VERSION}\"
#define ISIM_GIT_SHA \"${sha}\"
")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
