// The library face of @sluice/cli: what the commands do, callable from code.
export {};
