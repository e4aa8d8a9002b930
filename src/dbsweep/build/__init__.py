"""Builds from source, for every engine: the cache (`cache`), the compiler's identity (`compiler`), the
build variants (`variants`), the `Recipe` an engine implements to be built (`recipe`) and the count of the
objects a build compiles, for its progress (`objects`); `autoconf` helps recipes built with configure.
Nothing here knows an engine: each supplies its recipe from its package."""
