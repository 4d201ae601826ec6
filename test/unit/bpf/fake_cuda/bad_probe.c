/* A "libcuda.so.1" whose only entry point starts with int3, an instruction uprobes refuse:
 * attaching while a process maps it fails (ERR_TRACE_011); the other entry points are missing
 * (WRN_TRACE_002). */
__asm__(".text\n"
	".globl cuCtxSynchronize\n"
	".type cuCtxSynchronize, @function\n"
	"cuCtxSynchronize:\n"
	"\tint3\n"
	"\tret\n"
	".size cuCtxSynchronize, .-cuCtxSynchronize\n");
