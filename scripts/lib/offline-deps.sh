# The offline device bundle (issue 16): the Debian packages a GPU build needs, carried as .deb
# files to a machine without network and unpacked into a private prefix, never into /.
# Sourced by scripts/gpu-bundle (which downloads them), scripts/gpu-check (which unpacks them
# when the machine lacks the libraries) and scripts/test-offline-bundle (CI's check of it).
#
#   offline_packages            the package names, one per line (Debian 12 names: the build
#                               needs the -dev packages, the binaries the runtime libraries)
#   offline_unpack DEBS PREFIX  unpacks every DEBS/*.deb into PREFIX (dpkg -x, or ar + tar where
#                               dpkg is missing), makes the CMake package files that name /usr
#                               point into PREFIX, and prints PREFIX/usr, the CMAKE_PREFIX_PATH.
#                               Does nothing when PREFIX already holds the same .deb files.
#   offline_gpu_targets         the CMake targets scripts/gpu-check builds (and
#                               scripts/test-offline-bundle builds against the bundle), one per line
#   offline_have_system_deps    exit 0 when this machine's own CMake package files for every
#                               dependency exist (then the bundle is not needed)

offline_gpu_targets() {
  printf '%s\n' test_kernels_gpu test_runner_gpu test_live_gpu isim_cuda isim-kernel-bench isim \
    isim-calibrate
}

offline_packages() {
  printf '%s\n' libeigen3-dev libboost1.74-dev libboost-program-options1.74-dev \
    libboost-program-options1.74.0 libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7 \
    doctest-dev nlohmann-json3-dev
}

# The config file of each find_package() in CMakeLists.txt and tests/, relative to a prefix's usr/.
offline_config_files() {
  printf '%s\n' share/eigen3/cmake/Eigen3Config.cmake \
    lib/x86_64-linux-gnu/cmake/Boost-1.74.0/BoostConfig.cmake \
    lib/x86_64-linux-gnu/cmake/boost_program_options-1.74.0/boost_program_options-config.cmake \
    lib/x86_64-linux-gnu/cmake/fmt/fmt-config.cmake \
    lib/x86_64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake \
    lib/cmake/doctest/doctestConfig.cmake share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake
}

offline_have_system_deps() {
  local f
  while read -r f; do [[ -f /usr/$f ]] || return 1; done < <(offline_config_files)
}

_offline_extract() {  # DEB DIR
  if command -v dpkg-deb > /dev/null; then
    dpkg-deb -x "$1" "$2"
    return
  fi
  local member
  member=$(ar t "$1" | grep '^data\.tar') || { echo "offline: $1: no data.tar member" >&2; return 1; }
  case $member in
    *.xz) ar p "$1" "$member" | tar -xJ -C "$2" ;;
    *.zst) ar p "$1" "$member" | zstd -dc | tar -x -C "$2" ;;
    *.gz) ar p "$1" "$member" | tar -xz -C "$2" ;;
    *) ar p "$1" "$member" | tar -x -C "$2" ;;
  esac
}

offline_unpack() {  # DEBS PREFIX
  local debs=$1 prefix=$2 f stamp
  shopt -s nullglob
  local files=("$debs"/*.deb)
  shopt -u nullglob
  if ((${#files[@]} == 0)); then
    echo "offline: no .deb files in $debs (run scripts/gpu-bundle on a machine with network)" >&2
    return 2
  fi
  stamp=$( (cd "$debs" && ls -1 ./*.deb | sort && cat ./*.deb | cksum) )
  if [[ -f $prefix/.unpacked && $(cat "$prefix/.unpacked") == "$stamp" ]]; then
    echo "$prefix/usr"
    return 0
  fi
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for f in "${files[@]}"; do
    _offline_extract "$f" "$prefix" || { echo "offline: cannot unpack $f" >&2; return 1; }
  done
  # doctest's exported targets name the prefix it was built for ("/usr") instead of computing
  # it from the file's place; point them at this prefix. Other packages compute theirs.
  local usr
  usr=$(cd "$prefix/usr" && pwd)
  for f in "$prefix"/usr/lib/cmake/doctest/doctestTargets.cmake; do
    [[ -f $f ]] && sed -i "s|set(_IMPORT_PREFIX \"/usr\")|set(_IMPORT_PREFIX \"$usr\")|" "$f"
  done
  while read -r f; do
    [[ -f $prefix/usr/$f ]] || { echo "offline: $debs lacks usr/$f (a package missing?)" >&2; return 1; }
  done < <(offline_config_files)
  echo "$stamp" > "$prefix/.unpacked"
  echo "$usr"
}
