using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-key reserve, modelled on two or three nodes, each with its own connection, against the real statements:
/// random interleavings of per-key claims (<see cref="KeyedClaimSql.ClaimPerKey"/>, the rule with M), handler ends
/// (final or retry), outcome writes with the hand-off (<see cref="KeyedClaimSql.HandOff"/> with M + 1, reserves for
/// the keys the node runs items of, at most one per key per node), commits and rollbacks, and node crashes (their
/// leases expire: every running row of theirs returns to ready). A node starts a reserve only at a final end of a
/// handler of its key (paired, before that outcome is written), or at the hand-off's commit if such an end came while
/// it was in flight; a retry end leaves it reserved, or released when no handler of the key is left on the node.
/// After every step: handlers executing per key never exceed M (the model), running rows per key never exceed M + 1,
/// each key's items are claimed in id order; at the end, with every node drained, nothing is lost (every item is
/// finished, or ready or scheduled again, none running).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyReserveProperties(PostgresFixture postgres)
{
    public enum Act
    {
        /// <summary>Begin and claim (or commit / roll back the node's open transaction).</summary>
        Claim,

        /// <summary>Begin, write the node's ended outcomes and hand off (or commit / roll back the open transaction).</summary>
        Write,

        /// <summary>One of the node's handlers ends with a final outcome.</summary>
        EndFinal,

        /// <summary>One of the node's handlers ends with a stored retry.</summary>
        EndRetry,

        /// <summary>The node dies: its transaction rolls back, its leases expire (rows running back to ready), its state is gone.</summary>
        Crash,
    }

    public sealed record Move(Act Act, bool Fail, int Node, int Count, int Pick)
    {
        public override string ToString() => $"n{Node}:{Act}{(Act is Act.Claim or Act.Write ? "/" + Count : string.Empty)}{(Act is Act.EndFinal or Act.EndRetry ? "#" + Pick : string.Empty)}{(Fail ? "!" : string.Empty)}";
    }

    public sealed record Scenario(string?[] Keys, int PerKey, int Nodes, Move[] Steps)
    {
        public override string ToString() =>
            $"M={PerKey} nodes={Nodes} rows=[{string.Join(",", Keys.Select(k => k ?? "-"))}] steps=[{string.Join(" ", Steps.AsEnumerable())}]";
    }

    public static class Arbitraries
    {
        private static readonly Gen<Move> Steps =
            from act in Gen.Frequency(
                (3, Gen.Constant(Act.Claim)), (5, Gen.Constant(Act.Write)), (5, Gen.Constant(Act.EndFinal)),
                (1, Gen.Constant(Act.EndRetry)), (1, Gen.Frequency((1, Gen.Constant(Act.Crash)), (3, Gen.Constant(Act.EndFinal)))))
            from fail in Gen.Frequency((6, Gen.Constant(false)), (1, Gen.Constant(true)))
            from node in Gen.Choose(0, 2)
            from count in Gen.Choose(1, 4)
            from pick in Gen.Choose(0, 20)
            select new Move(act, fail, node, count, pick);

        public static Arbitrary<Scenario> Scenarios() =>
            (from keys in Gen.Choose(4, 16).SelectMany(n => Gen.ArrayOf(Gen.Frequency((1, Gen.Constant<string?>(null)), (6, Gen.Elements<string?>("a", "b"))), n))
             from perKey in Gen.Choose(2, 3)
             from nodes in Gen.Choose(2, 3)
             from steps in Gen.Choose(10, 60).SelectMany(n => Gen.ArrayOf(Steps, n))
             select new Scenario(keys, perKey, nodes, steps)).ToArbitrary();
    }

    [Property(MaxTest = 60, Arbitrary = [typeof(Arbitraries)])]
    public async Task ReservesOnSeveralNodes_NeverMoreThanMExecutingPerKey_ClaimedInIdOrder_NothingLost(Scenario scenario)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var m = scenario.PerKey;
        await claim.InsertAsync([.. scenario.Keys.Select(k => (k, 0, 0))]);
        var nodes = new Node[scenario.Nodes];
        try
        {
            for (var i = 0; i < nodes.Length; i++)
            {
                nodes[i] = new Node("n" + i, await claim.OpenAsync());
            }

            foreach (var step in scenario.Steps)
            {
                var node = nodes[step.Node % nodes.Length];
                switch (step.Act)
                {
                    case Act.Claim or Act.Write when node.Open is not null:
                        await node.FinishAsync(step.Fail);
                        break;
                    case Act.Claim:
                        await node.ClaimAsync(claim, step.Count, m);
                        break;
                    case Act.Write:
                        await node.WriteAsync(claim, m, handOff: true);
                        break;
                    case Act.EndFinal or Act.EndRetry:
                        node.End(step.Pick, step.Act == Act.EndFinal);
                        break;
                    case Act.Crash:
                        node = nodes[step.Node % nodes.Length] = await node.CrashAsync(claim);
                        break;
                }

                await CheckAsync(claim, nodes, m, $"after {step}");
            }

            // Drain: every open transaction commits, every handler ends (final), every outcome is written without a
            // hand-off, and every reserve is released (the node stops).
            foreach (var node in nodes)
            {
                if (node.Open is not null)
                {
                    await node.FinishAsync(fail: false);
                }

                while (node.Executing.Count > 0)
                {
                    node.End(0, final: true);
                }

                node.Stop();
                await node.WriteAsync(claim, m, handOff: false);
                if (node.Open is not null)
                {
                    await node.FinishAsync(fail: false);
                }

                await CheckAsync(claim, nodes, m, $"after draining {node.Name}");
            }

            var states = await postgres.ScalarAsync<short[]>($"SELECT coalesce(array_agg(state ORDER BY id), '{{}}') FROM {claim.Items}");
            Assert.Equal(scenario.Keys.Length, states.Length);
            Assert.All(states, state => Assert.Contains(state, new short[] { StorageSql.Ready, StorageSql.Completed, 5 }));
            Assert.Equal((long)states.Count(s => s == StorageSql.Completed), nodes.Sum(n => n.FinishedWritten));
        }
        finally
        {
            foreach (var node in nodes)
            {
                if (node is not null)
                {
                    await node.Connection.DisposeAsync();
                }
            }
        }
    }

    private static async Task CheckAsync(KeyedClaim claim, Node[] nodes, int m, string when)
    {
        var executing = nodes.SelectMany(n => n.Executing.Values).Where(k => k is not null).GroupBy(k => k);
        foreach (var key in executing)
        {
            Assert.True(key.Count() <= m, $"{when}: {key.Count()} handlers of key {key.Key} execute, M = {m}: {string.Join(" ", nodes.Select(n => n.Describe()))}");
        }

        foreach (var node in nodes)
        {
            Assert.True(node.Reserve.Count <= 2, $"{when}: {node.Name} holds {node.Reserve.Count} reserves for 2 keys.");
        }

        await using var connection = await claim.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT id, ordering_key, state, attempts FROM {claim.Items} ORDER BY id", connection);
        var rows = new List<(long Id, string? Key, short State, int Attempts)>();
        await using (var reader = await command.ExecuteReaderAsync())
        {
            while (await reader.ReadAsync())
            {
                rows.Add((reader.GetInt64(0), reader.IsDBNull(1) ? null : reader.GetString(1), reader.GetInt16(2), reader.GetInt32(3)));
            }
        }

        foreach (var key in rows.Where(r => r.Key is not null).Select(r => r.Key).Distinct())
        {
            var running = rows.Count(r => r.Key == key && r.State == 1);
            Assert.True(running <= m + 1, $"{when}: key {key} has {running} running rows, M + 1 = {m + 1}.");
            var claimed = rows.Where(r => r.Key == key && r.Attempts > 0).Select(r => r.Id).ToList();
            var waitingOlder = rows.Where(r => r.Key == key && r.Attempts == 0 && claimed.Count > 0 && r.Id < claimed.Max()).Select(r => r.Id).ToList();
            Assert.True(waitingOlder.Count == 0, $"{when}: key {key} claimed {string.Join(",", claimed)} before {string.Join(",", waitingOlder)}.");
        }
    }

    private enum Kind
    {
        Final,
        Retry,
        Release,
    }

    /// <summary>One node: its handlers executing, its ended outcomes not yet written, its reserves, its open transaction.</summary>
    private sealed class Node(string name, NpgsqlConnection connection)
    {
        public string Name { get; } = name;

        public NpgsqlConnection Connection { get; private set; } = connection;

        public Dictionary<long, string?> Executing { get; } = [];

        public List<(long Id, string? Key, Kind Kind)> Pending { get; } = [];

        public Dictionary<string, long> Reserve { get; } = [];

        public OpenTransaction? Open { get; private set; }

        public long FinishedWritten { get; private set; }

        private bool _stopped;

        public string Describe() => $"{Name}[exec {string.Join(",", Executing.Keys)}; reserve {string.Join(",", Reserve.Select(r => r.Key + "=" + r.Value))}; pending {string.Join(",", Pending.Select(p => p.Id + ":" + p.Kind))}]";

        public async Task ClaimAsync(KeyedClaim claim, int count, int m)
        {
            var transaction = await Connection.BeginTransactionAsync();
            var result = await claim.ClaimAsync(count, m, Connection, transaction, Name);
            var keys = await KeysAsync(claim, result.Ids, transaction);
            Open = new OpenTransaction(transaction, [], [.. result.Ids.Select(id => (id, keys[id], false))], []);
        }

        /// <summary>Writes every pending outcome in a new transaction, then (with final keyed outcomes) the hand-off with reserves.</summary>
        public async Task WriteAsync(KeyedClaim claim, int m, bool handOff)
        {
            if (Pending.Count == 0)
            {
                return;
            }

            var transaction = await Connection.BeginTransactionAsync();
            var written = Pending.ToList();
            foreach (var (id, _, kind) in written)
            {
                var set = kind switch
                {
                    Kind.Final => "state = 2, finished_at = now(), lease_owner = NULL, lease_until = NULL",
                    Kind.Retry => "state = 5, run_at = now(), lease_owner = NULL, lease_until = NULL",
                    _ => "state = 0, lease_owner = NULL, lease_until = NULL",
                };
                await using var write = new NpgsqlCommand($"UPDATE {claim.Items} SET {set} WHERE id = {id} AND state = 1 AND lease_owner = '{Name}'", Connection, transaction);
                await write.ExecuteNonQueryAsync();
            }

            var finalKeys = written.Where(w => w.Kind == Kind.Final && w.Key is not null).Select(w => w.Key!).ToList();
            var claimed = new List<(long Id, string? Key, bool Reserved)>();
            var reserveKeys = new List<string>();
            if (handOff && !_stopped && finalKeys.Count > 0)
            {
                reserveKeys = [.. finalKeys.Distinct().Where(k => Executing.ContainsValue(k) && !Reserve.ContainsKey(k))];
                await using var command = new NpgsqlCommand(new KeyedClaimSql(claim.Sql).HandOff, Connection, transaction)
                {
                    Parameters =
                    {
                        new NpgsqlParameter<string> { TypedValue = KeyedClaim.Queue },
                        new NpgsqlParameter<int> { TypedValue = finalKeys.Count + reserveKeys.Count },
                        new NpgsqlParameter<string> { TypedValue = Name },
                        new NpgsqlParameter<TimeSpan> { TypedValue = TimeSpan.FromHours(1) },
                        new NpgsqlParameter<int> { TypedValue = reserveKeys.Count > 0 ? m + 1 : m },
                        new NpgsqlParameter<string[]> { TypedValue = [.. finalKeys.Distinct()] },
                        new NpgsqlParameter<int> { TypedValue = m },
                        new NpgsqlParameter<string[]> { TypedValue = [.. reserveKeys] },
                    },
                };
                await using var reader = await command.ExecuteReaderAsync();
                while (await reader.ReadAsync())
                {
                    claimed.Add((reader.GetInt64(0), reader.GetString(8), reader.GetBoolean(9)));
                }
            }

            Open = new OpenTransaction(transaction, written, claimed, reserveKeys.ToDictionary(k => k, _ => 0));
        }

        public async Task FinishAsync(bool fail)
        {
            var open = Open!;
            Open = null;
            if (fail)
            {
                await open.Transaction.RollbackAsync();
                await open.Transaction.DisposeAsync();
                return;
            }

            await open.Transaction.CommitAsync();
            await open.Transaction.DisposeAsync();
            foreach (var outcome in open.Written)
            {
                Pending.Remove(outcome);
                FinishedWritten += outcome.Kind == Kind.Final ? 1 : 0;
            }

            foreach (var (id, key, reserved) in open.Claimed)
            {
                if (!reserved)
                {
                    Executing.Add(id, key);
                }
                else if (open.Unpaired.TryGetValue(key!, out var unpaired) && unpaired > 0)
                {
                    open.Unpaired[key!] = unpaired - 1; // a final end came while the hand-off was in flight: paired with it
                    Executing.Add(id, key);
                }
                else if (!_stopped && Executing.ContainsValue(key) && !Reserve.ContainsKey(key!))
                {
                    Reserve.Add(key!, id);
                }
                else
                {
                    Pending.Add((id, key, Kind.Release));
                }
            }
        }

        /// <summary>A handler ends: a final end starts its key's reserve (paired); a retry end releases it when no handler of the key is left.</summary>
        public void End(int pick, bool final)
        {
            if (Executing.Count == 0)
            {
                return;
            }

            var (id, key) = Executing.OrderBy(e => e.Key).ElementAt(pick % Executing.Count);
            Executing.Remove(id);
            Pending.Add((id, key, final ? Kind.Final : Kind.Retry));
            if (key is null)
            {
                return;
            }

            if (Reserve.TryGetValue(key, out var reserved))
            {
                if (final)
                {
                    Reserve.Remove(key);
                    Executing.Add(reserved, key);
                }
                else if (!Executing.ContainsValue(key))
                {
                    Reserve.Remove(key);
                    Pending.Add((reserved, key, Kind.Release));
                }
            }
            else if (final && Open is { } open && open.Unpaired.TryGetValue(key, out var unpaired))
            {
                open.Unpaired[key] = unpaired + 1;
            }
        }

        /// <summary>Stopping: no more reserves; the unstarted ones are released.</summary>
        public void Stop()
        {
            _stopped = true;
            foreach (var (key, id) in Reserve)
            {
                Pending.Add((id, key, Kind.Release));
            }

            Reserve.Clear();
        }

        /// <summary>The node dies: its transaction rolls back (the session ends), and its leases expire: a reaper returns its running rows to ready.</summary>
        public async Task<Node> CrashAsync(KeyedClaim claim)
        {
            await Connection.DisposeAsync(); // the open transaction, if any, rolls back
            var replacement = new Node(Name, await claim.OpenAsync()) { FinishedWritten = FinishedWritten };
            await using var reap = new NpgsqlCommand($"UPDATE {claim.Items} SET state = 0, lease_owner = NULL, lease_until = NULL WHERE state = 1 AND lease_owner = '{Name}'", replacement.Connection);
            await reap.ExecuteNonQueryAsync();
            return replacement;
        }

        private async Task<Dictionary<long, string?>> KeysAsync(KeyedClaim claim, List<long> ids, NpgsqlTransaction transaction)
        {
            var keys = new Dictionary<long, string?>();
            if (ids.Count == 0)
            {
                return keys;
            }

            await using var command = new NpgsqlCommand($"SELECT id, ordering_key FROM {claim.Items} WHERE id IN ({string.Join(",", ids)})", Connection, transaction);
            await using var reader = await command.ExecuteReaderAsync();
            while (await reader.ReadAsync())
            {
                keys[reader.GetInt64(0)] = reader.IsDBNull(1) ? null : reader.GetString(1);
            }

            return keys;
        }
    }

    private sealed record OpenTransaction(
        NpgsqlTransaction Transaction,
        List<(long Id, string? Key, Kind Kind)> Written,
        List<(long Id, string? Key, bool Reserved)> Claimed,
        Dictionary<string, int> Unpaired);
}
