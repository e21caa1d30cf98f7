# Required and optional dependencies. Optional parts are switched on when their
# packages are present and the configure output says which.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PROTOBUFC REQUIRED libprotobuf-c)
find_program(PROTOC_C NAMES protoc-c protoc-gen-c REQUIRED)

# onnx.proto: Debian's libonnx-dev, else the onnx Python package.
find_path(PRECIS_ONNX_PROTO_DIR onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH)
if(NOT PRECIS_ONNX_PROTO_DIR)
  execute_process(COMMAND python3 -c "import onnx,os;print(os.path.dirname(onnx.__file__))"
                  OUTPUT_VARIABLE _onnx_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_onnx_py AND EXISTS ${_onnx_py}/onnx.proto)
    set(PRECIS_ONNX_PROTO_DIR ${_onnx_py} CACHE PATH "" FORCE)
  endif()
endif()
if(NOT PRECIS_ONNX_PROTO_DIR)
  message(FATAL_ERROR "onnx.proto not found: install libonnx-dev (scripts/setup.sh does)")
endif()

set(PRECIS_HAVE_DNNL OFF)
set(PRECIS_DNNL_STATUS "OFF (libdnnl-dev not found)")
if(PRECIS_WITH_DNNL)
  find_path(DNNL_INCLUDE_DIR dnnl.h)
  find_library(DNNL_LIBRARY dnnl)
  if(DNNL_INCLUDE_DIR AND DNNL_LIBRARY)
    set(PRECIS_HAVE_DNNL ON)
    set(PRECIS_DNNL_STATUS "ON (${DNNL_LIBRARY})")
  endif()
else()
  set(PRECIS_DNNL_STATUS "OFF (disabled by PRECIS_WITH_DNNL=OFF)")
endif()

set(PRECIS_HAVE_CUDA OFF)
set(PRECIS_CUDA_STATUS "OFF (no CUDA toolkit found)")
if(PRECIS_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(PRECIS_HAVE_CUDA ON)
    set(PRECIS_CUDA_STATUS "ON (${CMAKE_CUDA_COMPILER}) — detected; the CUDA backend lands with the cuda work")
  endif()
else()
  set(PRECIS_CUDA_STATUS "OFF (disabled by PRECIS_WITH_CUDA=OFF)")
endif()

# OpenMP: the CPU backend's threads (oneDNN itself is built on libgomp).
find_package(OpenMP REQUIRED COMPONENTS C)

# Image decoding for calibration folders (src/io/image.c): libpng, libjpeg(-turbo).
pkg_check_modules(PNG REQUIRED libpng)
find_path(JPEG_INCLUDE_DIR jpeglib.h)
find_library(JPEG_LIBRARY NAMES jpeg)
if(NOT JPEG_INCLUDE_DIR OR NOT JPEG_LIBRARY)
  message(FATAL_ERROR "libjpeg not found: install libjpeg62-turbo-dev (scripts/setup.sh does)")
endif()
set(PRECIS_IMAGE_INCLUDE_DIRS ${PNG_INCLUDE_DIRS} ${JPEG_INCLUDE_DIR})
set(PRECIS_IMAGE_LIBS ${PNG_LINK_LIBRARIES} ${JPEG_LIBRARY})
