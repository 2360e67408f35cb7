// XTRAIN_API: the public API, which xtrain's shared libraries export. The libraries are built with
// -fvisibility=hidden -fvisibility-inlines-hidden (cmake/XtrainModule.cmake), so a class or free
// function of include/xtrain/ that a program links must carry this mark; exception classes too, so
// that their type_info is one object for every library and program that throws or catches them.
// docs/architecture.md ("Symbol visibility") says what else is exported and why.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define XTRAIN_API [[gnu::visibility("default")]]
#else
#define XTRAIN_API
#endif
