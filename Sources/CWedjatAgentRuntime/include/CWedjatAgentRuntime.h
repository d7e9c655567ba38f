// (nothing to import: this target only provides symbols to the static Swift runtime)
