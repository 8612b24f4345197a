using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The Kestrel side of the cluster endpoints: plain request delegates over <see cref="ClusterApi"/>.</summary>
internal sealed class ClusterEndpoints(ClusterApi api, AdminMapping mapping)
{
    public async Task Get(HttpContext context) =>
        await AdminEndpoints.Write(context, await api.GetAsync(AdminEndpoints.RouteName(context), context.RequestAborted).ConfigureAwait(false)).ConfigureAwait(false);

    /// <summary>Reads the body (up to <see cref="ClusterSettingsRequest.MaxBodyBytes"/>, copied, so the reader is done with it before the database is awaited), then applies the change.</summary>
    public async Task Patch(HttpContext context)
    {
        var reader = context.Request.BodyReader;
        var (buffer, tooLarge) = await AdminEndpoints.ReadBody(reader, ClusterSettingsRequest.MaxBodyBytes, context.RequestAborted).ConfigureAwait(false);
        byte[] body;
        try
        {
            body = tooLarge ? [] : System.Buffers.BuffersExtensions.ToArray(buffer);
        }
        finally
        {
            reader.AdvanceTo(buffer.End);
        }

        var request = AdminEndpoints.DescribeChange(context, mapping, new System.Buffers.ReadOnlySequence<byte>(body), tooLarge);
        var reply = await api.ChangeAsync(request, context.RequestAborted).ConfigureAwait(false);
        await AdminEndpoints.Write(context, reply).ConfigureAwait(false);
    }
}
