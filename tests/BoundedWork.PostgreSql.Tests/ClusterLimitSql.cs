namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The cluster-limit tests' own SQL: limits set with a plain upsert into <c>queue_settings</c>, and measurements taken
/// outside the library, on the database's clock. Handlers of consumers started with <c>limits</c> record each run's
/// start and end in <c>runs</c>; a trigger records each claim (a row entering state running) in <c>claims</c> with the
/// start of the statement that claimed it.
/// </summary>
internal static class ClusterLimitSql
{
    public const string Queue = "notices";

    /// <summary>The tables the measurements go to; call before any consumer starts.</summary>
    public static Task CreateRunsAsync(PostgresFixture postgres, string schema) => postgres.ExecuteAsync($"""
        CREATE TABLE {schema}.runs (item_id bigint NOT NULL, number integer NOT NULL, key text, node integer NOT NULL, attempt integer NOT NULL,
                                    started_at timestamptz NOT NULL, ended_at timestamptz);
        CREATE TABLE {schema}.claims (item_id bigint NOT NULL, at timestamptz NOT NULL);
        """);

    /// <summary>The claims trigger; call once the items table exists (a node of the queue has started).</summary>
    public static Task RecordClaimsAsync(PostgresFixture postgres, string schema) => postgres.ExecuteAsync($"""
        CREATE FUNCTION {schema}.record_claim() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO {schema}.claims (item_id, at) VALUES (NEW.id, statement_timestamp());
            RETURN NULL;
        END $$;
        CREATE TRIGGER record_claim AFTER UPDATE ON {schema}.items FOR EACH ROW
            WHEN (NEW.state = 1 AND OLD.state <> 1) EXECUTE FUNCTION {schema}.record_claim();
        """);

    /// <summary>Sets the queue's cluster limits (null: none), as an operator's change would, in one upsert.</summary>
    public static Task SetLimitsAsync(PostgresFixture postgres, string schema, int? maxRunning = null, int perKey = 1, double? startsPerSecond = null, int? burst = null) =>
        postgres.ExecuteAsync($"""
            INSERT INTO {schema}.queue_settings (queue, max_running, max_running_per_key, starts_per_second, start_burst, version, updated_at, updated_by)
            VALUES ('{Queue}', {Sql(maxRunning)}, {perKey}, {Sql(startsPerSecond)}, {Sql(burst)}, 1, now(), 'test')
            ON CONFLICT (queue) DO UPDATE SET max_running = excluded.max_running, max_running_per_key = excluded.max_running_per_key,
                starts_per_second = excluded.starts_per_second, start_burst = excluded.start_burst,
                version = queue_settings.version + 1, updated_at = now(), updated_by = 'test'
            """);

    /// <summary>
    /// The most runs that overlapped at any one moment at or after <paramref name="from"/> (null: ever), within one key
    /// when <paramref name="perKey"/>; a run without an end (its node was killed) counts until <paramref name="openEnd"/>.
    /// Overlap peaks at a run's start, so it is counted there (and at <paramref name="from"/>); runs that start at the
    /// same instant another ends count as overlapping.
    /// </summary>
    public static Task<long> MaxOverlapAsync(PostgresFixture postgres, string schema, bool perKey = false, DateTime? openEnd = null, DateTime? from = null)
    {
        var end = openEnd is { } e ? $"'{e:O}'::timestamptz" : "'infinity'::timestamptz";
        var sameKey = perKey ? "AND o.key = p.key" : string.Empty;
        var since = from is { } f ? $"'{f:O}'::timestamptz" : "'-infinity'::timestamptz";
        return postgres.ScalarAsync<long>($"""
            WITH points AS (
                SELECT greatest(started_at, {since}) AS at, key FROM {schema}.runs WHERE coalesce(ended_at, {end}) >= {since})
            SELECT coalesce(max((SELECT count(*) FROM {schema}.runs o
                                 WHERE o.started_at <= p.at AND coalesce(o.ended_at, {end}) >= p.at {sameKey})), 0)
            FROM points p
            """);
    }

    /// <summary>
    /// The most older items of its key that had not ended when a run started (at most M - 1 when a key's items start in
    /// enqueue order, at most M at once). Every item must have run (each item's first run is taken).
    /// </summary>
    public static Task<long> MaxUnfinishedEldersAsync(PostgresFixture postgres, string schema) => postgres.ScalarAsync<long>($"""
        WITH first AS (SELECT DISTINCT ON (item_id) item_id, key, started_at, ended_at FROM {schema}.runs ORDER BY item_id, attempt)
        SELECT coalesce(max((SELECT count(*) FROM first o
                             WHERE o.key = r.key AND o.item_id < r.item_id AND NOT (o.ended_at < r.started_at))), 0)
        FROM first r
        """);

    /// <summary>The pairs of items of one key where the newer was first claimed before the older (claimed in one statement counts as together).</summary>
    public static Task<long> KeyClaimOrderInversionsAsync(PostgresFixture postgres, string schema) => postgres.ScalarAsync<long>($"""
        WITH first AS (SELECT item_id, min(at) AS at FROM {schema}.claims GROUP BY item_id),
        keyed AS (SELECT i.id, i.ordering_key, f.at FROM {schema}.items i JOIN first f ON f.item_id = i.id WHERE i.ordering_key IS NOT NULL)
        SELECT count(*) FROM keyed c JOIN keyed o ON o.ordering_key = c.ordering_key AND o.id < c.id AND o.at > c.at
        """);

    /// <summary>The most claims whose statements started within any one second.</summary>
    public static Task<long> MaxClaimsInOneSecondAsync(PostgresFixture postgres, string schema) => postgres.ScalarAsync<long>($"""
        SELECT coalesce(max((SELECT count(*) FROM {schema}.claims c2 WHERE c2.at >= c1.at AND c2.at < c1.at + interval '1 second')), 0)
        FROM {schema}.claims c1
        """);

    public static Task<DateTime> NowAsync(PostgresFixture postgres) => postgres.ScalarAsync<DateTime>("SELECT clock_timestamp()");

    private static string Sql(int? value) => value is { } v ? v.ToString(System.Globalization.CultureInfo.InvariantCulture) : "NULL";

    private static string Sql(double? value) => value is { } v ? v.ToString("R", System.Globalization.CultureInfo.InvariantCulture) : "NULL";
}
