// A C++ stack for SymbolizerTests: names the demangler must turn back into namespaces,
// templates, operators and an anonymous namespace. Calls are marked `CALL <callee>` as in stack.c.
#include <utility>
#include "modules.h"

namespace wedjat {
namespace fixture {

namespace {
__attribute__((noinline)) int hidden(int n) {
    fixture_print_stack(); /* CALL fixture_print_stack */
    return n;
}
}  // namespace

template <typename T> struct Worker {
    __attribute__((noinline)) long operator()(const T &p) {
        long r = hidden(p.first); /* CALL hidden */
        return r + p.second;
    }
};

template <typename T> __attribute__((noinline)) long apply(const T &p) {
    long r = Worker<T>()(p); /* CALL Worker::operator() */
    return r + 1;
}

}  // namespace fixture
}  // namespace wedjat

int main() {
    long r = wedjat::fixture::apply(std::pair<int, long>(1, 2)); /* CALL apply */
    return r == 0;
}
