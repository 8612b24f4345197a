using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The fair claim's order, driven statement by statement against a real server (no nodes, no timing): a model of a
/// fleet with a number of places (workers), where each step ends the oldest running item when the places are full (all
/// handlers take equally long) and claims the next. The starts per tenant are read from what the claim returned. The
/// shares of service follow the weights whatever places there are, a tenant that was idle banks no credit, no tenant
/// waits forever, and the cleanup of the tenants' rows leaves the claims exactly as they were, their bound and rate
/// included.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class FairClaimOrderTests(PostgresFixture postgres)
{
    /// <summary>
    /// Every tenant backlogged; the starts after the places first fill, per tenant, within 10% of the weights' shares.
    /// Failed before the virtual times for 12 places and ten tenants, t0 at weight 2: the turn counted what a tenant
    /// ran, and t0 held 3 of the 12 places (25% of the starts against 18.2%).
    /// </summary>
    [Theory]
    [InlineData(12, 10, 2, 1, 330)]
    [InlineData(12, 10, 2, 3, 330)]
    [InlineData(4, 3, 3, 1, 200)]
    [InlineData(1, 4, 5, 1, 160)]
    [InlineData(7, 5, 4, 2, 240)]
    public async Task Shares_FollowTheWeights_WhateverThePlaces(int places, int tenants, int heavyWeight, int batch, int starts)
    {
        var model = await Model.CreateAsync(postgres, $$"""{"t0": {{heavyWeight}}}""");
        await model.EnqueueAsync(Enumerable.Range(0, tenants).Select(t => ("t" + t, starts)).ToArray());

        var started = await model.RunAsync(places, batch, places + starts);

        var measured = started.Skip(places).ToList();
        var totalWeight = heavyWeight + tenants - 1;
        for (var t = 0; t < tenants; t++)
        {
            var expected = (t == 0 ? heavyWeight : 1) / (double)totalWeight;
            var share = measured.Count(s => s == "t" + t) / (double)measured.Count;
            Assert.True(Math.Abs(share - expected) <= expected * 0.10, $"t{t}: {share:P1} of the starts, expected {expected:P1} (places {places}).");
        }
    }

    /// <summary>
    /// Tenants a and b run alone for 120 starts while c has nothing ready; then c's backlog arrives. Over the next 30
    /// starts c gets about its third (it starts level with the others, not 60 starts behind them), and a and b go on.
    /// </summary>
    [Fact]
    public async Task TenantReturningFromIdle_BanksNoCredit_AndTheOthersGoOn()
    {
        var model = await Model.CreateAsync(postgres, null);
        await model.EnqueueAsync(("a", 200), ("b", 200));
        await model.RunAsync(places: 1, batch: 1, starts: 120);

        await model.EnqueueAsync(("c", 200));
        var after = await model.RunAsync(places: 1, batch: 1, starts: 30);

        Assert.InRange(after.Count(t => t == "c"), 9, 11);
        Assert.InRange(after.Count(t => t == "a"), 9, 11);
        Assert.InRange(after.Count(t => t == "b"), 9, 11);
    }

    /// <summary>A tenant of weight 1 beside one of weight 50: it starts at least once in every 52 starts (nobody waits forever).</summary>
    [Fact]
    public async Task LightTenant_BesideAHeavyOne_IsNeverLeftWaiting()
    {
        var model = await Model.CreateAsync(postgres, """{"heavy": 50}""");
        await model.EnqueueAsync(("heavy", 300), ("light", 20));

        var started = await model.RunAsync(places: 3, batch: 1, starts: 260);

        var gaps = started.Select((t, i) => (t, i)).Where(s => s.t == "light").Select(s => s.i).Prepend(-1).ToList();
        Assert.True(gaps.Count >= 5, $"light started {gaps.Count - 1} times in 260 starts.");
        Assert.All(gaps.Zip(gaps.Skip(1)), g => Assert.True(g.Second - g.First <= 52, $"light waited {g.Second - g.First} starts."));
    }

    /// <summary>
    /// Two queues alike, under a bound of 1 running per tenant and a start rate (burst 3, 0.01 per second): a, b and c
    /// run (a dries up and falls behind the clock; c's last item waits for a token), a's bucket is made full (its time moved back an hour, in both). The
    /// cleanup of one queue removes a's virtual time and bucket, the other queue keeps them; then both get the same
    /// items and the same steps, and they claim the same tenants in the same order: a its burst and no more, b and c
    /// (no tokens) nothing, no tenant ever above its bound.
    /// </summary>
    [Fact]
    public async Task Cleanup_RemovesOnlyRowsThatMeanNoRow_AndTheClaimsAfterItAreThoseOfAQueueNotCleaned()
    {
        var sql = await PlanCost.MigratedSchemaAsync(postgres);
        var kept = await Model.CreateAsync(postgres, null, sql, "kept", bound: 1, rate: (0.01, 3));
        var cleaned = await Model.CreateAsync(postgres, null, sql, "cleaned", bound: 1, rate: (0.01, 3));
        foreach (var model in new[] { kept, cleaned })
        {
            await model.EnqueueAsync(("a", 2), ("b", 3), ("c", 4)); // c's fourth waits for a token: the queue is not idle
            Assert.Equal("a b c a b c b c", string.Join(' ', await model.RunAsync(places: 1, batch: 1, starts: 8)));
            await postgres.ExecuteAsync($"UPDATE {sql.TenantTokens} SET tokens_at = tokens_at - interval '1 hour' WHERE queue = '{model.Queue}' AND tenant = 'a'");
        }

        Assert.Equal("a:2 b:3 c:3 |2", await cleaned.RowsAsync());
        Assert.Equal((1, 1), await cleaned.CleanupAsync());
        Assert.Equal("b:3 c:3 |2", await cleaned.RowsAsync());
        Assert.Equal("b,c", await postgres.ScalarAsync<string>($"SELECT string_agg(tenant, ',' ORDER BY tenant) FROM {sql.TenantTokens} WHERE queue = 'cleaned'"));
        Assert.Equal("a:2 b:3 c:3 |2", await kept.RowsAsync());

        var after = new List<string>[2];
        for (var i = 0; i < 2; i++)
        {
            var model = i == 0 ? kept : cleaned;
            await model.EnqueueAsync(("a", 5), ("b", 2), ("c", 2));
            after[i] = await model.RunAsync(places: 2, batch: 1, starts: 3, steps: 12, checkBound: 1);
        }

        Assert.Equal(after[0], after[1]);
        Assert.Equal(["a", "a", "a"], after[1]);
    }

    /// <summary>
    /// A queue with no ready item left (its busy period over): every virtual time is removed, the ones above the clock
    /// too (a tenant served ahead while nobody else waited owes nobody), then the clock itself (no tenant row left), and
    /// the tenants that come back start level, shares by weight as before.
    /// </summary>
    [Fact]
    public async Task Cleanup_OfAQuietQueue_RemovesEveryRowAndTheClock_AndTheReturningTenantsShareByWeight()
    {
        var model = await Model.CreateAsync(postgres, """{"a": 2}""");
        await model.EnqueueAsync(("a", 4), ("b", 2));
        Assert.Equal("a a b a a b", string.Join(' ', await model.RunAsync(places: 1, batch: 1, starts: 6)));
        Assert.Equal("a:2 b:2 |1", await model.RowsAsync());

        Assert.Equal((2, 0), await model.CleanupAsync());
        Assert.Equal("|", await model.RowsAsync());

        await model.EnqueueAsync(("a", 40), ("b", 40));
        var started = await model.RunAsync(places: 1, batch: 1, starts: 30);
        Assert.Equal(20, started.Count(t => t == "a"));
    }

    /// <summary>A fleet in miniature on a migrated schema: one queue, its fair-share settings, the claim run as a node runs it (the lock, the claim, the commit).</summary>
    private sealed class Model
    {
        private readonly PostgresFixture _postgres;
        private readonly StorageSql _sql;
        private readonly FairClaimSql _fair;
        private readonly Queue<long> _running = new();

        private Model(PostgresFixture postgres, StorageSql sql, string queue, bool rated)
        {
            (_postgres, _sql, Queue, Rated) = (postgres, sql, queue, rated);
            _fair = new FairClaimSql(sql);
        }

        public string Queue { get; }

        private bool Rated { get; }

        public static async Task<Model> CreateAsync(PostgresFixture postgres, string? weights, StorageSql? sql = null, string queue = "fair", int? bound = null, (double Rate, int Burst)? rate = null)
        {
            sql ??= await PlanCost.MigratedSchemaAsync(postgres);
            await postgres.ExecuteAsync($"""
                INSERT INTO {sql.QueueSettings} (queue, fair_share, tenant_weights, max_running_per_tenant, tenant_starts_per_second, tenant_start_burst)
                VALUES ('{queue}', true, {(weights is null ? "NULL" : "'" + weights + "'")}, {bound?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "NULL"},
                        {rate?.Rate.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "NULL"}, {rate?.Burst.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "NULL"})
                """);
            return new Model(postgres, sql, queue, rate is not null);
        }

        public Task EnqueueAsync(params (string Tenant, int Count)[] backlog) => _postgres.ExecuteAsync(string.Join('\n', backlog.Select(b =>
            $"INSERT INTO {_sql.Items} (queue, payload, tenant) SELECT '{Queue}', '{{}}', '{b.Tenant}' FROM generate_series(1, {b.Count});")));

        /// <summary>
        /// Runs steps until <paramref name="starts"/> items started (or <paramref name="steps"/> steps): each step ends the
        /// oldest running items (at most <paramref name="batch"/>) while <paramref name="places"/> are taken (one when the last claim took nothing), then claims up
        /// to the free places, at most <paramref name="batch"/>. The tenants started, in order.
        /// </summary>
        public async Task<List<string>> RunAsync(int places, int batch, int starts, int steps = int.MaxValue, int? checkBound = null)
        {
            var started = new List<string>();
            await using var connection = new NpgsqlConnection(_postgres.ConnectionString);
            await connection.OpenAsync();
            var version = await ScalarAsync<long>(connection, $"SELECT version FROM {_sql.QueueSettings} WHERE queue = '{Queue}'");
            var tookNothing = false;
            for (var step = 0; step < steps && started.Count < starts; step++)
            {
                for (var ended = 0; _running.Count > 0 && (_running.Count >= places || (tookNothing && ended == 0)) && ended < batch; ended++)
                {
                    var done = _running.Dequeue();
                    await ScalarAsync<int>(connection, $"UPDATE {_sql.Items} SET state = {StorageSql.Completed}, finished_at = now() WHERE id = {done} RETURNING 1");
                }

                var took = await ClaimAsync(connection, Math.Min(batch, Math.Min(places - _running.Count, starts - started.Count)), version);
                tookNothing = took.Count == 0;
                foreach (var (id, tenant) in took)
                {
                    _running.Enqueue(id);
                    started.Add(tenant);
                }

                if (checkBound is int bound)
                {
                    var most = await ScalarAsync<long>(connection, $"SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM {_sql.Items} WHERE queue = '{Queue}' AND state = 1 GROUP BY tenant) r");
                    Assert.True(most <= bound, $"{most} items of one tenant running, above the bound {bound}.");
                }
            }

            return started;
        }

        /// <summary>The tenants' virtual times and the clock, as "tenant:vtime ... |clock".</summary>
        public async Task<string> RowsAsync() => await _postgres.ScalarAsync<string>($"""
            SELECT coalesce((SELECT string_agg(tenant || ':' || vtime, ' ' ORDER BY tenant) || ' ' FROM {_sql.TenantVtime} WHERE queue = '{Queue}'), '')
                   || '|' || coalesce((SELECT vtime::text FROM {_sql.QueueVtime} WHERE queue = '{Queue}'), '')
            """);

        /// <summary>The maintenance's cleanup of the tenants' rows, as it runs it: the virtual times and the buckets removed.</summary>
        public async Task<(int Vtimes, int Buckets)> CleanupAsync()
        {
            await using var connection = new NpgsqlConnection(_postgres.ConnectionString);
            await connection.OpenAsync();
            await using var transaction = await connection.BeginTransactionAsync();
            await ExecuteAsync(connection, _fair.Lock, Queue);
            var vtimes = await ExecuteAsync(connection, _fair.CleanupVtime, Queue, 5000);
            var buckets = await ExecuteAsync(connection, _fair.CleanupTokens, Queue, 5000);
            await ExecuteAsync(connection, _fair.ResetClock, Queue);
            await transaction.CommitAsync();
            return (vtimes, buckets);
        }

        private static async Task<int> ExecuteAsync(NpgsqlConnection connection, string text, params object[] parameters)
        {
            await using var command = new NpgsqlCommand(text, connection);
            foreach (var parameter in parameters)
            {
                command.Parameters.Add(new NpgsqlParameter { Value = parameter });
            }

            return await command.ExecuteNonQueryAsync();
        }

        private static async Task<TValue> ScalarAsync<TValue>(NpgsqlConnection connection, string text)
        {
            await using var command = new NpgsqlCommand(text, connection);
            return (TValue)(await command.ExecuteScalarAsync())!;
        }

        private async Task<List<(long Id, string Tenant)>> ClaimAsync(NpgsqlConnection connection, int count, long version)
        {
            var took = new List<(long, string)>();
            await using var transaction = await connection.BeginTransactionAsync();
            await ExecuteAsync(connection, _fair.Lock, Queue);
            await using (var claim = new NpgsqlCommand(Rated ? _fair.RatedClaim : _fair.Claim, connection))
            {
                ClaimParameters.AddLeading(claim.Parameters, Queue, count, "model", TimeSpan.FromHours(1));
                claim.Parameters.Add(new NpgsqlParameter<long> { TypedValue = version });
                claim.Parameters.Add(new NpgsqlParameter<int> { TypedValue = 0 });
                await using var reader = await claim.ExecuteReaderAsync();
                var (summary, tenant) = (reader.GetOrdinal("summary"), reader.GetOrdinal("tenant"));
                while (await reader.ReadAsync())
                {
                    if (!reader.GetBoolean(summary))
                    {
                        took.Add((reader.GetInt64(0), reader.GetString(tenant)));
                    }
                }
            }

            await transaction.CommitAsync();
            return took;
        }
    }
}
