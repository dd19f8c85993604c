export { loadMalloc, MallocUnavailableError, NATIVE_FILE, sourceBuildPath, type Malloc, type MallocInfo } from './lib/malloc';
export { MallocTrimmer, type TrimmerOptions, type TrimResult } from './lib/trimmer';
