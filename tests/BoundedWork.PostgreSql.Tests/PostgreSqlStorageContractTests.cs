using BoundedWork.Testing.Storage;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The storage contract every durable storage passes, run against PostgreSQL (each test on a schema of its own).</summary>
[Collection(PostgresCollection.Name)]
public sealed class PostgreSqlStorageContractTests(PostgresFixture postgres) : StorageContractTests
{
    protected override async Task<Action<WorkQueueBuilder<ContractItem>>> CreateStorageAsync(int claimsPerWorker = 2)
    {
        var schema = await postgres.NewSchemaAsync();
        return builder => builder.UsePostgreSql(postgres.ConnectionString, o =>
        {
            o.Schema = schema;
            o.ClaimsPerWorker = claimsPerWorker;
            o.PollInterval = TimeSpan.FromMilliseconds(200);
        });
    }
}
