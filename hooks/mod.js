export function register(on) {}
