using BoundedWork.Hosting;
using BoundedWork.Testing.Storage;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>The storage contract, run against a storage written only against the public API (the seam's second implementation).</summary>
public sealed class InMemoryStorageContractTests : StorageContractTests
{
    protected override Task<Action<WorkQueueBuilder<ContractItem>>> CreateStorageAsync(int claimsPerWorker = 2) =>
        Task.FromResult<Action<WorkQueueBuilder<ContractItem>>>(
            builder => builder.UseStorage((_, context) => new InMemoryWorkQueueStorage<ContractItem>(context, claimsPerWorker)));
}
