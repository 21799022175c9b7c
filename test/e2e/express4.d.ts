// express@4 installed under an alias for the version matrix; its API as used here is typed like Express 5's.
declare module 'express4' {
  import express from 'express';
  export default express;
}
