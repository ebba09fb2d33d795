package sandbox

// RacyGrain is racyGrain, for the tests of stamps.
const RacyGrain = racyGrain
