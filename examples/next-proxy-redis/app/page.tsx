export default function Home() {
  return (
    <main>
      <h1>sluice + Next.js proxy on Redis</h1>
      <p>
        <code>/api/*</code> is rate limited by <code>proxy.ts</code> on the Node runtime. Try <code>curl -i /api/hello</code> a few times.
      </p>
    </main>
  );
}
