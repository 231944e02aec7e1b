/* graphjit's C API: a session over a TensorFlow graph, run with tensors in host memory or
 * in the session's GPU's, for bindings (the Python package `graphjit`) and C programs.
 *
 * Every call that can fail returns a gj_status: NULL on success, else an error the caller
 * reads (gj_status_code, gj_status_message: the message names the node and op where a
 * node failed, as the command line does) and frees (gj_status_free). Strings a call hands
 * out are freed with gj_string_free. A session may run from several threads at once. */
#ifndef GRAPHJIT_C_API_H_
#define GRAPHJIT_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GJ_API __attribute__((visibility("default")))

typedef struct gj_status gj_status;
typedef struct gj_session gj_session;
typedef struct gj_tensor gj_tensor;

/* Error codes: TensorFlow's (3 invalid argument, 5 not found, 8 resource exhausted, 9
 * failed precondition, 12 unimplemented, 13 internal, ...). */
GJ_API int gj_status_code(const gj_status* status);
GJ_API const char* gj_status_message(const gj_status* status);
GJ_API void gj_status_free(gj_status* status);
GJ_API void gj_string_free(char* text);

/* "graphjit X.Y.Z (...)": the version and what the library was built with. */
GJ_API const char* gj_version(void);

/* A session over `model` (a GraphDef, binary or text). `config`: a ConfigProto, binary or
 * text, or NULL; `jit`: "off", "on_1" or "on_2", or NULL for the config's level; `device`:
 * "cpu", "gpu" or "gpu-emu" (their first GPU), "gpu:N" or "gpu-emu:N" (the driver's GPU N),
 * or NULL for the config's; `options`: flags as GRAPHJIT_FLAGS
 * takes them (applied after the config and GRAPHJIT_FLAGS itself), or NULL. What the process
 * shares is sized by the first session: its --jit_cache_mb bounds the kernel cache, and a later
 * session's other value is reported on stderr and ignored. */
GJ_API gj_status* gj_session_new(const void* model, size_t model_bytes, const void* config, size_t config_bytes, const char* jit,
                                 const char* device, const char* options, gj_session** session);
GJ_API void gj_session_free(gj_session* session);

/* Data types: TensorFlow's DataType numbers (1 float32, 2 float64, 3 int32, 4 uint8, 5
 * int16, 6 int8, 9 int64, 10 bool, 14 bfloat16, 19 float16). */

/* A tensor over the caller's memory, read in place by the runs it is fed to: `data` holds
 * the dense, row-major elements, in host memory (`on_device` 0) or at a device address of
 * the session's GPU (`on_device` 1). The memory must stay valid, and unchanged while a run
 * reads it, until `release(release_arg)` is called (once: when no run and no tensor holds it
 * any more, or before this returns an error; `release` may be NULL). */
GJ_API gj_status* gj_tensor_wrap(gj_session* session, int dtype, int rank, const int64_t* dims, void* data, int on_device,
                                 void (*release)(void*), void* release_arg, gj_tensor** tensor);
GJ_API int gj_tensor_dtype(const gj_tensor* tensor);
GJ_API int gj_tensor_rank(const gj_tensor* tensor);
GJ_API const int64_t* gj_tensor_dims(const gj_tensor* tensor);
/* Its elements: a host pointer, or (gj_tensor_on_device) a device address on the session's
 * GPU. Valid while the tensor is. */
GJ_API void* gj_tensor_data(const gj_tensor* tensor);
GJ_API int gj_tensor_on_device(const gj_tensor* tensor);
GJ_API void gj_tensor_free(gj_tensor* tensor);
/* The number of the GPU a device tensor is on (gpu:N), -1 for a host tensor. */
GJ_API int gj_tensor_device(const gj_tensor* tensor);
/* The caller has queued work on `stream` (a CUstream; CU_STREAM_LEGACY for the legacy
 * default stream) that uses the device memory of `tensor` (a fetch on the GPU), and may free
 * the tensor before that work is done: the memory is not handed out again until it is (an
 * event recorded on `stream` now, queried before reuse). */
GJ_API gj_status* gj_tensor_record_stream(const gj_tensor* tensor, void* stream);

/* Runs the session: feeds[i] replaces the tensor feed_names[i] ("node" or "node:i");
 * outputs[j] gets the fetch fetch_names[j], a tensor the caller frees. With
 * `fetch_on_device`, fetches the GPU made stay there (gj_tensor_on_device), complete when
 * this returns (ready for any stream). `stream`: a CUstream whose work so far makes the
 * device tensors fed, or CU_STREAM_LEGACY (or CU_STREAM_PER_THREAD) for work on a default
 * stream: the session's stream waits for it on the device, without blocking the caller;
 * NULL: none.
 * `trace_path`: where to write a Chrome trace of this run, or NULL. */
GJ_API gj_status* gj_session_run(gj_session* session, int num_feeds, const char* const* feed_names, gj_tensor* const* feeds,
                                 int num_fetches, const char* const* fetch_names, int fetch_on_device, void* stream,
                                 const char* trace_path, gj_tensor** outputs);

/* The JIT's counters (compiles, cache hits, launches, ...), the last run's copies between
 * host and GPU, and the session's host memory (bytes in use, their peak, allocations), as
 * "key=value" pairs separated by spaces. */
GJ_API gj_status* gj_session_stats(gj_session* session, char** text);
/* What clustering does to the model, and why each other node is left out: the table
 * `graphjit clusters` prints. */
GJ_API gj_status* gj_session_clusters(gj_session* session, char** text);
/* Runs the model once, as gj_session_run does (`stream` as there), compiling every cluster
 * afresh and writing its stages to `dir` (DIR/<cluster>/<NN>_<stage>.<ext>, as `graphjit dump`). */
GJ_API gj_status* gj_session_dump(gj_session* session, const char* dir, int num_feeds, const char* const* feed_names,
                                  gj_tensor* const* feeds, int num_fetches, const char* const* fetch_names, void* stream);

/* The graphjit command line in process (argv[0] the program's name): `graphjit bench ...`
 * and the other subcommands, printing what they print; their exit status. */
GJ_API int gj_command(int argc, const char* const* argv);

#ifdef __cplusplus
}
#endif

#endif /* GRAPHJIT_C_API_H_ */
