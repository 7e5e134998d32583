// main.cpp — the installed orbit.h from C++; prints where liborbit came from.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include <orbit.h>

int main()
{
	if (orbit_init() != 0)
		return 1;
	{
		std::string name = "c++ consumer";
		ORBIT_SCOPE(name.c_str());
		ORBIT_DOUBLE("x", 1.5);
	}
	int err = orbit_flush();
	orbit_shutdown();
	Dl_info info;
	if (err != 0 || dladdr((void *)orbit_init, &info) == 0 || info.dli_fname == nullptr)
		return 1;
	std::printf("liborbit: %s\n", info.dli_fname);
	return 0;
}
