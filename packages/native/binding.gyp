{
  "targets": [
    {
      "target_name": "ccheckers_native",
      "sources": [
        "src/addon.cc",
        "../../native-src/src/cpu.cpp",
        "../../native-src/src/kernel_portable.cpp",
        "../../native-src/src/kernel_bmi2.cpp"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "../../native-src/include",
        "../../native-src/src"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++1y", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-O3", "-fexceptions"]
    }
  ]
}
