// glibc's malloc_trim and mallinfo2 for Node (Node-API, so one build serves every Node version).
//
// Why: glibc keeps freed memory inside its main heap resident until the free block reaches the
// heap's top. A defender frees megabytes of trace buffers per run between live allocations, so
// the heap's high-water stays resident (measured: 66 MB of 110 MB). malloc_trim(0) returns every
// whole free page of every arena to the kernel (madvise), wherever it lies.
// On a C library without them (musl, macOS) both report "unsupported" and do nothing.
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != napi_ok) {                                          \
      napi_throw_error(env, NULL, "malloc addon: " #call " failed");  \
      return NULL;                                                    \
    }                                                                 \
  } while (0)

static napi_value Supported(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
#if defined(__GLIBC__)
  CHECK(napi_get_boolean(env, true, &out));
#else
  CHECK(napi_get_boolean(env, false, &out));
#endif
  return out;
}

// trim(): true when memory was returned to the kernel.
static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  bool released = false;
#if defined(__GLIBC__)
  released = malloc_trim(0) == 1;
#endif
  napi_value out;
  CHECK(napi_get_boolean(env, released, &out));
  return out;
}

static napi_status setNumber(napi_env env, napi_value obj, const char* key, double v) {
  napi_value n;
  napi_status s = napi_create_double(env, v, &n);
  if (s != napi_ok) return s;
  return napi_set_named_property(env, obj, key, n);
}

// info(): mallinfo2's byte counts, or undefined when unsupported.
static napi_value Info(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 m = mallinfo2();
  CHECK(napi_create_object(env, &out));
  CHECK(setNumber(env, out, "heapBytes", (double)m.arena));
  CHECK(setNumber(env, out, "mmappedBytes", (double)m.hblkhd));
  CHECK(setNumber(env, out, "inUseBytes", (double)m.uordblks));
  CHECK(setNumber(env, out, "freeBytes", (double)m.fordblks));
  CHECK(setNumber(env, out, "releasableTopBytes", (double)m.keepcost));
#else
  CHECK(napi_get_undefined(env, &out));
#endif
  return out;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"supported", NULL, Supported, NULL, NULL, NULL, napi_enumerable, NULL},
      {"trim", NULL, Trim, NULL, NULL, NULL, napi_enumerable, NULL},
      {"info", NULL, Info, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
