/* Asks dlsym(RTLD_NEXT) for puts from the main program, which is linked without PIE: its mapping
 * starts at its link address and its load bias is 0, the case the interposer's own RTLD_NEXT
 * search once missed (every answer NULL while it was preloaded). Exit 0 when puts was found. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
	void *p = dlsym(RTLD_NEXT, "puts");
	printf("dlsym(RTLD_NEXT, \"puts\") from a non-PIE program: %s\n", p ? "found" : "NULL");
	return p ? 0 : 1;
}
