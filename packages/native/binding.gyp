{
  "variables": {
    # The C++ engine: native-src/ of the repository, or the copy inside the npm package
    # (scripts/pack-sources.mjs puts it there when the package is packed).
    "native_src": "<!(node -p \"require('fs').existsSync('native-src/include') ? 'native-src' : '../../native-src'\")"
  },
  "targets": [
    {
      "target_name": "ccheckers_native",
      "sources": [
        "src/addon.cc",
        "<(native_src)/src/cpu.cpp",
        "<(native_src)/src/kernel_portable.cpp",
        "<(native_src)/src/kernel_bmi2.cpp"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<(native_src)/include",
        "<(native_src)/src"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++1y", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-fvisibility=hidden", "-Wall", "-Wextra"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0",
        "OTHER_CPLUSPLUSFLAGS": ["-O3"]
      },
      "msvs_settings": {
        "VCCLCompilerTool": { "ExceptionHandling": 1, "AdditionalOptions": ["/std:c++17"] }
      }
    }
  ]
}
