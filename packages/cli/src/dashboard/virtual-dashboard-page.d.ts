/** Served at build time by build/page.mjs (a tsup plugin): the dashboard page's script and style, as text. */
declare module 'virtual:sluice-dashboard-page' {
  /** src/dashboard/page/dashboard.js: the browser script. */
  export const script: string;
  /** src/dashboard/page/dashboard.css. */
  export const style: string;
}
