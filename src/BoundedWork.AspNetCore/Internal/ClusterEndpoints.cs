using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The Kestrel side of the cluster endpoints: plain request delegates over <see cref="ClusterApi"/>.</summary>
internal sealed class ClusterEndpoints(ClusterApi api, AdminMapping mapping)
{
    public async Task Get(HttpContext context) =>
        await AdminEndpoints.Write(context, await api.GetAsync(AdminEndpoints.RouteName(context), context.RequestAborted).ConfigureAwait(false)).ConfigureAwait(false);

    /// <summary>Reads the body (up to <see cref="ClusterSettingsRequest.MaxBodyBytes"/>, see <see cref="AdminEndpoints.ReadCopiedChange"/>), then applies the change.</summary>
    public async Task Patch(HttpContext context)
    {
        var request = await AdminEndpoints.ReadCopiedChange(context, mapping, ClusterSettingsRequest.MaxBodyBytes).ConfigureAwait(false);
        var reply = await api.ChangeAsync(request, context.RequestAborted).ConfigureAwait(false);
        await AdminEndpoints.Write(context, reply).ConfigureAwait(false);
    }
}
