export default function Home() {
  return (
    <main>
      <h1>sluice + Next.js edge middleware</h1>
      <p>
        <code>/api/*</code> is rate limited by <code>middleware.ts</code>. Try <code>curl -i /api/hello</code> a few times.
      </p>
    </main>
  );
}
