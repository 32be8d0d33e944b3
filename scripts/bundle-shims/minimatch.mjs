// Bundle stand-in for minimatch: oclif matches plugin names with it only when it loads
// plugins from node_modules, which the bundle never does (its plugins are provided in
// memory: src/main.ts). Exact names still match, so a mistaken use is not silently wrong.
export function minimatch(name, pattern) {
  return name === pattern
}
