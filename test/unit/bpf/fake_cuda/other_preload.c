/* Another preloaded interposer, for the interposer tests: it wraps getenv and finds the real one
 * with dlsym(RTLD_NEXT), as interposers do. Loaded after libmscale_cuda_interposer.so (which wraps
 * dlsym), it must get libc's getenv, not itself back. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((visibility("default"))) char *getenv(const char *name)
{
	static char *(*real)(const char *);
	if (!real)
		real = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
	if (!real || real == getenv) {
		static const char msg[] = "other-preload: dlsym(RTLD_NEXT, \"getenv\") returned this library's getenv\n";
		ssize_t ignored = write(2, msg, sizeof(msg) - 1);
		(void)ignored;
		_exit(3);
	}
	return real(name);
}
