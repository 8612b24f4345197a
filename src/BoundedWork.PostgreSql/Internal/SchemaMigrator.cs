using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Creates or upgrades the storage schema. Every node runs it at start; a transaction-scoped advisory lock per schema
/// makes nodes that start at once take turns, and each version is applied once, in the same transaction that records
/// it, so a failed upgrade leaves the previous version intact.
/// </summary>
internal static class SchemaMigrator
{
    /// <returns>The version found and the version left.</returns>
    public static async Task<(int From, int To)> MigrateAsync(NpgsqlDataSource dataSource, StorageSql sql, CancellationToken cancellationToken)
    {
        var connection = await dataSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
            await using (transaction.ConfigureAwait(false))
            {
                await ExecuteAsync(connection, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", cancellationToken, "boundedwork.schema:" + sql.Schema).ConfigureAwait(false);
                await ExecuteAsync(connection, $"""
                    CREATE SCHEMA IF NOT EXISTS "{sql.Schema}";
                    CREATE TABLE IF NOT EXISTS {sql.SchemaVersion} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
                    """, cancellationToken).ConfigureAwait(false);

                int from;
                var read = new NpgsqlCommand($"SELECT coalesce(max(version), 0) FROM {sql.SchemaVersion}", connection);
                await using (read.ConfigureAwait(false))
                {
                    from = (int)(await read.ExecuteScalarAsync(cancellationToken).ConfigureAwait(false))!;
                }

                if (from > sql.Migrations.Count)
                {
                    throw new InvalidOperationException(
                        $"The BoundedWork schema \"{sql.Schema}\" is at version {from}, newer than this package's version {sql.Migrations.Count}: upgrade BoundedWork.PostgreSql on this node.");
                }

                for (var version = from; version < sql.Migrations.Count; version++)
                {
                    await ExecuteAsync(connection, sql.Migrations[version], cancellationToken).ConfigureAwait(false);
                    await ExecuteAsync(connection, $"INSERT INTO {sql.SchemaVersion} (version) VALUES ($1)", cancellationToken, version + 1).ConfigureAwait(false);
                }

                await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
                return (from, sql.Migrations.Count);
            }
        }
    }

    private static async Task ExecuteAsync(NpgsqlConnection connection, string text, CancellationToken cancellationToken, params object[] parameters)
    {
        var command = new NpgsqlCommand(text, connection);
        await using (command.ConfigureAwait(false))
        {
            foreach (var parameter in parameters)
            {
                command.Parameters.Add(new NpgsqlParameter { Value = parameter });
            }

            await command.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
        }
    }
}
